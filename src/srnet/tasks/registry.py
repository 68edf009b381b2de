"""The task registry: adding a task is one module and one line here."""

from __future__ import annotations

from srnet.errors import SrnetError
from srnet.tasks import factver, nli, paraphrase, sentiment, synthetic, text
from srnet.tasks.spec import Task

TASKS: dict[str, Task] = {
    task.name: task
    for task in (nli.TASK, paraphrase.TASK, factver.TASK, sentiment.TASK, synthetic.TASK, text.TASK)
}


def get_task(name: str) -> Task:
    """The registered task called ``name``."""
    try:
        return TASKS[name]
    except KeyError:
        raise SrnetError(f"unknown task '{name}'; known tasks: {sorted(TASKS)}") from None


def task_names() -> list[str]:
    """Names of all registered tasks."""
    return sorted(TASKS)
