import pytest
import torch


@pytest.fixture
def one_thread():
    """Tiny LSTMs gain nothing from threads; on a loaded 2-core machine extra threads
    oversubscribe the cores and make these tests several times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
