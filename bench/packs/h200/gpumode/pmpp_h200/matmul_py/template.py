from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """A @ B in float16."""
    a, b = data
    return a @ b
