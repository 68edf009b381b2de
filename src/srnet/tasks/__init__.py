"""Tasks: data specs, data formats, readers, the task registry, the synthetic task and example loading."""

from srnet.tasks.base import Example, LabelSpace
from srnet.tasks.formats import FORMATS, DataFormat, register_format
from srnet.tasks.loading import (
    LoadedSplit,
    label_space,
    load_examples,
    load_split,
    split_name,
    stratified_subsample,
)
from srnet.tasks.registry import TASKS, get_task, task_names
from srnet.tasks.spec import DataSpec, HubSpec, LabelScheme, SyntheticSpec, Task
from srnet.tasks.synthetic import generate_synthetic, word_overlap

__all__ = [
    "FORMATS",
    "TASKS",
    "DataFormat",
    "DataSpec",
    "Example",
    "HubSpec",
    "LabelScheme",
    "LabelSpace",
    "LoadedSplit",
    "SyntheticSpec",
    "Task",
    "generate_synthetic",
    "get_task",
    "label_space",
    "load_examples",
    "load_split",
    "register_format",
    "split_name",
    "stratified_subsample",
    "task_names",
    "word_overlap",
]
