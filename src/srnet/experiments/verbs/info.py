"""``srnet info``: versions, device and the default model's folder."""

from __future__ import annotations

import json

from srnet.experiments.verbs.base import Verb, register_verb

register_verb(Verb("info", help="versions, device and the default model path", api="info",
                   call=lambda args, info: print(json.dumps(info(), indent=2))))
