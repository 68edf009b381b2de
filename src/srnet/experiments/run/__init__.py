"""One run: a recipe checked, its run kind prepared (:mod:`.kinds`: ``task`` in :mod:`.task`,
``text`` in :mod:`.tamt`), its data read (:mod:`.data`), trained, evaluated (:mod:`.evaluate`) and
finished (:mod:`.finish`); :func:`.driver.run_recipe` drives it end to end."""
