"""Several GPU hosts behind one front end, through Ray: the front end's placement of jobs on the hosts'
slots (``placement``), a host's side (``hostagent``, run in a Ray actor by ``kcoral agent``:
``agent_command``), the front end's side of a job on a host (``remotejobs``), and the scheduler's job
runner for them (``runner``). Nothing outside this folder imports Ray."""
