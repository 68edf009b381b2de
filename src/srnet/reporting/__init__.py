"""Reading results: finished runs found, grouped and averaged over seeds
(:mod:`~srnet.reporting.aggregate`), the study report's sections (:mod:`~srnet.reporting.study`)
and the tables and figures they are drawn with (:mod:`~srnet.reporting.render`)."""
