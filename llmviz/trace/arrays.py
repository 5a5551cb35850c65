"""A trace's arrays.npz read lazily, within a bound on the bytes its arrays inflate to.

numpy's own reader (np.load) trusts each member: it inflates whatever the member holds, so a 5.6 MB upload whose
one member is 2.1 GB of deflated zeros made the server hold 2 GB before any check could say the array had the
wrong shape. Here nothing is inflated before it is accounted for:

- opening reads only each member's .npy header (its magic, dtype and shape: a few hundred bytes), refuses a
  header whose array does not fill its member exactly (the member's declared size in the zip) or is not numbers,
  and sums the bytes the arrays declare; over the caller's bound, the archive is refused before any array is read;
- each array is read on demand into a buffer of its declared size, never more: a stream that inflates beyond what
  its header and the zip declare is cut off there and refused (zipfile's CRC check runs on the member's last byte),
  and each array is read at most once, so a document naming one member for a thousand steps cannot read it a
  thousand times either;
- before an array is read, its header's values are checked against what the document and the model card let
  it hold (the finding's file, whose "logits" of 2.1 GB fit the local bound of 2 GiB, was inflated whole
  by a script's load before "damaged"; now refused unread whoever the caller).

The bound is the caller's (the Trace page passes its mode's: llmviz/ui/trace_file.replay_bound). The archive's own
checks (its members, their declared sizes) are llmviz/trace/archive.py's, as for the trace's .zip. Torch-free.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass

import numpy as np

from llmviz.errors import NotAllowedError
from llmviz.trace.archive import CHUNK, checked_members
from llmviz.trace.check import MAX_TRACE_JSON_BYTES, damaged

MAX_UNPACKED_BYTES = 2 * 2**30  # a trace's files, unpacked: more is refused before anything is inflated
# A local file is the person's own (written by their CLI or app), and its archive may unpack to at most
# MAX_UNPACKED_BYTES: locally its arrays may fill that, so any trace the archive check lets through still
# loads. Less would refuse real runs: gpt2-124m-random's 1,024-token prefill at capture full holds 12 layers x 2 maps
# x [12, 1024, 1024] fp32 = 1.2 GB of attention maps. It is still a bound checked before anything is read.
LOCAL_ARRAY_BYTES = MAX_UNPACKED_BYTES
# trace.json names every array (a step's list, a hook record's flags) among the fields of its step or record, which
# save() writes in some 290 bytes an array (the demo): within its cap, far fewer than this many. A header is read
# from each member on opening, so the count is checked first.
MAX_ARRAYS = MAX_TRACE_JSON_BYTES // 64
NUMBER_KINDS = "biuf"  # bool, int, uint, float: every array a trace writes


def megabytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def arrays_too_large(size: int, limit: int) -> NotAllowedError:
    """Not a damaged file: one larger than this caller replays (a public server's bound), as bound_replay says."""
    return NotAllowedError(f"the trace's arrays unpack to {megabytes(size)}; at most {megabytes(limit)} of arrays "
                           "may be replayed here (a file built to exhaust memory, or a run too large to replay here)",
                           code="trace_arrays_too_large", size=megabytes(size), limit=megabytes(limit))


@dataclass(frozen=True)
class Member:
    """One .npy member as its header declares it: where its data begins and how many bytes it holds."""

    info: zipfile.ZipInfo
    offset: int  # the header's length: the data's first byte in the member
    shape: tuple
    dtype: np.dtype
    fortran: bool

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def read_header(npz: zipfile.ZipFile, info: zipfile.ZipInfo) -> Member:
    """The member's .npy header, read from its first bytes (nothing after them is inflated), checked against the
    member's declared size: the array fills it exactly, of numbers, with no negative dimension."""
    name = info.filename
    with npz.open(info) as stream:
        version = np.lib.format.read_magic(stream)
        if version not in ((1, 0), (2, 0)):
            raise damaged(f"arrays.npz: {name} is in .npy format {version}, not one a trace uses")
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(stream)
        offset = stream.tell()
    if dtype.hasobject:
        raise damaged(f"arrays.npz: {name} holds Python objects (a pickle); a trace holds numbers")
    if dtype.kind not in NUMBER_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise damaged(f"arrays.npz: {name} holds {dtype} values; a trace holds numbers")
    if any(d < 0 for d in shape):
        raise damaged(f"arrays.npz: {name} declares a negative dimension {list(shape)}")
    member = Member(info, offset, tuple(shape), dtype, bool(fortran))
    if offset + member.nbytes != info.file_size:
        raise damaged(f"arrays.npz: {name} declares a {list(shape)} {dtype} array ({member.nbytes:,} bytes) but holds "
                      f"{info.file_size - offset:,} bytes after its header")
    return member


class BoundedArrays:
    """The arrays of an open arrays.npz by name (as np.load's keys: the member's name without .npy), read on
    demand and each at most once (a trace names every array once), so what is read stays within what was declared,
    and that within `limit`."""

    def __init__(self, npz: zipfile.ZipFile, limit: int):
        self._npz, self._read = npz, set()
        self._members = {}
        for info in checked_members(npz, MAX_UNPACKED_BYTES, "arrays.npz", MAX_ARRAYS):
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if key in self._members:
                raise damaged(f"arrays.npz holds {info.filename} twice")
            self._members[key] = read_header(npz, info)
        self.declared = sum(m.nbytes for m in self._members.values())
        if self.declared > limit:
            raise arrays_too_large(self.declared, limit)

    @property
    def files(self) -> list[str]:
        return list(self._members)

    def __contains__(self, key: str) -> bool:
        return key in self._members

    def read(self, key: str, shape: tuple, free: int) -> np.ndarray:
        """The array `key`, read once; refused unread unless its header declares `shape`, a None dimension at most
        `free` (what the document and the model card let that array be: llmviz/trace/records.py), so an array within
        the bound on bytes but not in its place (the finding's 2.1 GB "logits" for a 9,216-token vocabulary) is never
        inflated."""
        member = self._members.get(key)
        if member is None:
            raise damaged(f"trace.json names {key}, which arrays.npz does not hold")
        if len(member.shape) != len(shape) or any(d > free if want is None else d != want
                                                   for d, want in zip(member.shape, shape, strict=False)):
            wanted = ", ".join(f"at most {free:,}" if want is None else str(want) for want in shape)
            raise damaged(f"arrays.npz: {key} declares a {list(member.shape)} array, not [{wanted}] as the document "
                          "and the model card say")
        if key in self._read:  # a document naming one array for many steps would read it again and again
            raise damaged(f"arrays.npz: {key} is named twice in trace.json")
        self._read.add(key)
        return read_array(self._npz, member)


def read_array(npz: zipfile.ZipFile, member: Member) -> np.ndarray:
    """The member's array, inflated into a buffer of its declared size a MiB at a time; a stream that ends early
    or goes on past it is damaged, and zipfile checks the CRC as the member's last byte is read."""
    buffer = np.empty(member.nbytes, np.uint8)
    view = memoryview(buffer)
    with npz.open(member.info) as stream:
        stream.read(member.offset)
        done = 0
        while done < member.nbytes:
            chunk = stream.read(min(CHUNK, member.nbytes - done))
            if not chunk:
                raise damaged(f"arrays.npz: {member.info.filename} ends after {done:,} of its {member.nbytes:,} bytes")
            view[done:done + len(chunk)] = chunk
            done += len(chunk)
        if stream.read(1):
            raise damaged(f"arrays.npz: {member.info.filename} holds more than its header declares")
    order = "F" if member.fortran else "C"
    return buffer.view(member.dtype).reshape(member.shape, order=order)
