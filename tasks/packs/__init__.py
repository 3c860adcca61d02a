"""Problem packs: the field's problem sets served unchanged beside kcoral's own tasks (issue 32).

A tasks directory may hold, besides kcoral's task folders (``manifest.json`` + ``task.py``):
- KernelBench problem files: one ``.py`` file defining ``class Model(nn.Module)``, ``get_inputs()``
  and ``get_init_inputs()`` (id ``kernelbench/<folder>/<file stem>``);
- GPU MODE reference-kernels problem folders: ``task.yml`` + ``reference.py`` defining
  ``generate_input``, ``ref_kernel`` and ``check_implementation`` (id ``gpumode/<pack>/<problem>``).

How a problem becomes a task, and where its code runs:
- :mod:`.recognise` finds them by content, reading files and parsing them (``ast``, YAML) but never
  running them: the server lists a problem, or the reason it cannot be loaded, without executing it.
- :mod:`.manifest` writes the kcoral manifest a problem's task has (workloads, tolerance, device,
  template, where the problem's files are), with a pack's own settings (``kcoral-pack.json``) over
  the defaults; ``Task.module()`` then returns the format's adapter (:mod:`.kernelbench`,
  :mod:`.gpumode`), the task-module interface of tasks.harness.taskdef over the problem's own code.
- :mod:`.inspect` builds a problem's inputs and a reference run's outputs to describe them (shapes,
  dtypes), in the job image, one child process per problem with a deadline (runner.packprobe starts
  it): a problem that raises, hangs or crashes is reported with its reason and stops no other.
"""
