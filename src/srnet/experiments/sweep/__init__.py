"""Many runs: a sweep file planned into unique stages (:mod:`.plan`; stage references are
:mod:`srnet.experiments.refs`), the stage kinds (:mod:`.stages`), and their execution in worker
processes or Ray tasks (:mod:`.execute`, with stage locks from :mod:`srnet.rundir.locks` and
Ray's fate-sharing in :mod:`.reaper`)."""
