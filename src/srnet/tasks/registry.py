"""The task registry: adding a task is one module and one line here."""

from __future__ import annotations

from srnet.registry import Registry
from srnet.tasks import factver, nli, paraphrase, sentiment, synthetic, text
from srnet.tasks.spec import Task

TASKS: Registry[Task] = Registry("task")
for _task in (nli.TASK, paraphrase.TASK, factver.TASK, sentiment.TASK, synthetic.TASK, text.TASK):
    TASKS.add(_task.name, _task)


def get_task(name: str) -> Task:
    """The registered task called ``name``; SrnetError naming the known ones otherwise."""
    return TASKS.get(name)


def task_names() -> list[str]:
    """Names of all registered tasks."""
    return TASKS.names()
