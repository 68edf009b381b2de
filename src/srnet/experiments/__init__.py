"""Running recipes: one run (:mod:`~srnet.experiments.run`), many runs as a sweep of typed stages
(:mod:`~srnet.experiments.sweep`), the verbs on finished runs behind the CLI and the API
(:mod:`~srnet.experiments.verbs`), ``srnet compress``'s package (:mod:`~srnet.experiments.compress`),
the timing harness that bench and compress share (:mod:`~srnet.experiments.timing`) and the built-in
demo (:mod:`~srnet.experiments.demo`)."""
