"""What a run leaves on disk: the run-folder layout and the environment it records
(:mod:`~srnet.rundir.layout`) and the typed run record every run kind writes and every reader
reads (:mod:`~srnet.rundir.record`), and the folder locks of runs and sweep stages
(:mod:`~srnet.rundir.locks`). The lowest floor of the run machinery: it imports no
experiment code."""
