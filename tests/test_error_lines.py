"""The one line a failed rank is reported with: the line of its error that says what is wrong."""

import pytest

from commprof.errors import what_went_wrong

# DDP's own message (torch 2.13, gloo, one parameter unused), as error.json records it
DDP_UNUSED = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error "
    "indicates that your module has parameters that were not used in producing loss. You can enable unused parameter "
    "detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs participate in "
    "calculating loss. \nIf you already have done the above, then the distributed data parallel module wasn't able to "
    "locate the output tensors in the return value of your module's `forward` function. Please include the loss "
    "function and the structure of the return value of `forward` of your module when reporting this issue (e.g. list, "
    "dict, iterable).\nParameter indices which did not receive grad for rank 0: 2 3\n In addition, you can set the "
    "environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out information about which "
    "particular parameters did not receive gradient on this rank as part of this error"
)


def test_ddp_unused_parameters_first_sentence_and_what_to_do():
    assert what_went_wrong(DDP_UNUSED) == (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
        "(some parameters received no gradient: pass --find-unused-parameters)"
    )


@pytest.mark.parametrize(
    "message, line",
    [
        ("ValueError: batch has 3 rows, expected 4", "ValueError: batch has 3 rows, expected 4"),
        (
            "DistBackendError: [pair.cc:534] Connection closed by peer [127.0.0.1]:1234\nException raised from recv at "
            "pair.cc:534 (most recent call first):\nframe #0: c10::Error::Error()",
            "DistBackendError: [pair.cc:534] Connection closed by peer [127.0.0.1]:1234",
        ),
        (
            "\n\nRankStopped: stopped by the launcher (SIGTERM) while still running\n",
            "RankStopped: stopped by the launcher (SIGTERM) while still running",
        ),
        ("", ""),
    ],
)
def test_first_line_without_cpp_context(message, line):
    assert what_went_wrong(message) == line
