"""``srnet compress``: a fine-tuned model -> a faster model whose robustness is measured, gated and
written on its card.  One job per module:

=============== ==========================================================================
module          its job
=============== ==========================================================================
``config``      the verb's settings (no torch: the CLI parser reads it)
``source``      the user's model and the recipe that supplies its data
``preflight``   every check that can be made before anything is timed or trained
``sizing``      the cut sized to this machine (level 0: no cut), ``sizing.json``
``plan``        the stages as a sweep, built from each stage kind's typed params
``estimate``    ``--dry-run``'s time estimate
``run``         the verb: folder rules, one lock for its whole life, the sweep, the end
``gates``       the gates against the reference
``record``      ``compress.json`` as :class:`~srnet.experiments.compress.record.CompressRecord`
``finish``      figures, gates, record and the model folder
``card``        the model card, from the record alone; ``figure``: the speed curve
``summary``     what the command prints; ``stage``: the ``compress`` sweep stage kind
=============== ==========================================================================

The stages, in ``<out>/stages``: ``bias_fit`` (with a bias feature), ``dense`` (the user's model
evaluated), ``teacher`` (dense PoE, with a bias), ``teacher_pred`` (the distillation target),
``student`` (the OMP-gradient head+neuron cut at the sized level, none at level 0, then the
recovery), ``export``, ``shipped`` (the exported file scored as shipped under ``--runtime``),
``attack`` (``charswap`` of dense, teacher and the shipped file), ``bench`` and, under an INT8
runtime, ``reference_runtime`` (the reference in that runtime with no cut: the frontier's control).
"""
