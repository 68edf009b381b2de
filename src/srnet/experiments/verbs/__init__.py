"""The verbs on finished runs and models, each one function that the CLI, :mod:`srnet.api` and
the sweep stages call: attack, attack examples, bench, bias fit, export, split predictions and
mask transfer."""
