"""Reading results: finished runs found, read and labelled (:mod:`~srnet.reporting.runs`), grouped
into cohorts and averaged over seeds (:mod:`~srnet.reporting.stats`), the study report's sections
(:mod:`~srnet.reporting.study`) and the tables and figures they are drawn with
(:mod:`~srnet.reporting.render`)."""
