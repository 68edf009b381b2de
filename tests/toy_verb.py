"""A toy command from outside the package: all that adding a verb takes is a module like this one
(its function, its parser registered with ``register_command``, and, for sweeps, its stage) plus,
inside srnet, the function's line in ``srnet.api``. tests/cli/test_commands.py installs it as an
``srnet.plugins`` entry point and finds it in ``srnet --help``, the API and a sweep."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from srnet.cli.commands import register_command
from srnet.experiments.sweep.stages import NoParams, Stage, register_stage


def toy(out: str | Path, word: str = "toy") -> Path:
    """Write ``word`` to the file ``out``."""
    path = Path(out)
    path.write_text(word)
    return path


@register_command("toy", api="toy_verb:toy")
def add_toy(sub) -> None:
    p = sub.add_parser("toy", help="write a word to a file (a plug-in command)")
    p.add_argument("--out", required=True, help="file to write")
    p.add_argument("--word", default="toy")
    p.set_defaults(func=lambda args: print(f"wrote {toy(args.out, args.word)}") or 0)


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
