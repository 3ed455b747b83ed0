"""A script's step ends where its optimizer's step() returns: after every hook on the step, however registered; once
for a step that calls another optimizer's (a subclass's super().step(), an optimizer wrapping another)."""

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from commprof.instrument.optimizer_steps import on_step_return


class Doubled(torch.optim.SGD):
    """A subclass whose step calls its parent's."""

    def step(self, closure=None):
        return super().step(closure)


def test_the_step_ends_after_every_hook_on_it_once_per_outermost_step():
    events: list[str] = []
    remove = on_step_return(lambda optimizer: events.append(f"returned {type(optimizer).__name__}"))
    try:
        weights = torch.nn.Parameter(torch.ones(3))
        plain, doubled = torch.optim.SGD([weights], lr=0.1), Doubled([weights], lr=0.1)
        later = register_optimizer_step_post_hook(lambda optimizer, *_: events.append("a hook registered later"))
        try:
            weights.grad = torch.ones(3)
            plain.step()
            doubled.step()
        finally:
            later.remove()
    finally:
        remove()
    assert events == [
        "a hook registered later",
        "returned SGD",
        "a hook registered later",
        "a hook registered later",  # the parent's step, inside the subclass's: its hooks run twice, as torch runs them
        "returned Doubled",
    ]
    events.clear()
    plain.step()  # removed: nothing is told any more
    assert events == []
