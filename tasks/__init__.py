"""Server-owned evaluation tasks (``kcoral eval``): definitions, evaluators and holdouts."""
