"""``WallClock``: the run's wall time logged at each epoch's end, carried across a resume."""

from attentive_reader.training import wall_clock
from attentive_reader.training.wall_clock import WallClock


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


class Module:
    def __init__(self) -> None:
        self.logged: list[float] = []

    def log(self, name, value, **options) -> None:
        assert name == "train_wall_s" and options["rank_zero_only"]
        self.logged.append(value)


def test_epochs_add_up_and_a_resumed_clock_goes_on_from_its_checkpoint(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(wall_clock.time, "monotonic", clock)
    callback, module = WallClock(), Module()
    for seconds in (5.0, 3.0):
        callback.on_train_epoch_start(None, module)
        clock.now += seconds
        callback.on_train_epoch_end(None, module)
    assert module.logged == [5.0, 8.0]
    # A checkpoint saved 2 s into the third epoch holds 10 s.
    callback.on_train_epoch_start(None, module)
    clock.now += 2.0
    state = callback.state_dict()
    assert state == {"elapsed": 10.0}
    # The run is killed; a new process resumes from that checkpoint and takes 4 s an epoch.
    resumed, module = WallClock(), Module()
    clock.now += 50.0  # the time between the kill and the resume counts for nothing
    resumed.load_state_dict(state)
    resumed.on_train_epoch_start(None, module)
    clock.now += 4.0
    resumed.on_train_epoch_end(None, module)
    assert module.logged == [14.0]
    assert resumed.state_dict() == {"elapsed": 14.0}
