"""A toy command from outside the package: all that adding a verb takes is a module like this one
(its function, its :class:`~srnet.experiments.verbs.base.Verb` declaration and, for sweeps, its
stage) plus, inside srnet, the function's line in ``srnet.api``. tests/cli/test_commands.py installs it as an
``srnet.plugins`` entry point and finds it in ``srnet --help``, the API and a sweep."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from srnet.experiments.sweep.stages import NoParams, Stage, register_stage
from srnet.experiments.verbs.base import Verb, register_verb


def toy(out: str | Path, word: str = "toy") -> Path:
    """Write ``word`` to the file ``out``."""
    path = Path(out)
    path.write_text(word)
    return path


def toy_arguments(p) -> None:
    p.add_argument("--out", required=True, help="file to write")
    p.add_argument("--word", default="toy")


register_verb(Verb("toy", help="write a word to a file (a plug-in command)", api="toy_verb:toy",
                   arguments=toy_arguments, call=lambda args, toy: print(f"wrote {toy(args.out, args.word)}"),
                   stage="toy"))


class ToyParams(NoParams):
    word: str = Field("toy", description="the word to write")


@register_stage("toy")
class ToyStage(Stage):
    """``srnet toy`` as a sweep stage: the word goes to ``<folder>/toy.txt``."""

    params_model = ToyParams

    def output(self, folder: Path, params: ToyParams) -> Path:
        return folder / "toy.txt"

    def run(self, recipe, params: ToyParams, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        toy(self.output(folder, params), params.word)
