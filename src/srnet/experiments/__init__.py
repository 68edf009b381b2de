"""Running recipes: one run (:mod:`~srnet.experiments.run`), many runs as a sweep of typed stages
(:mod:`~srnet.experiments.sweep`), the verbs on finished runs behind the CLI and the API
(:mod:`~srnet.experiments.verbs`) and the built-in demo (:mod:`~srnet.experiments.demo`)."""
