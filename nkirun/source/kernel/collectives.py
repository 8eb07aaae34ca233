"""`nki.collectives` for traced kernels (NKI 0.6): ReplicaGroup and the collectives nkirun
simulates. Each call records instructions of nkirun's table (isa/all_gather.py, ...);
what they mean, their rules and their cost live there.

Readings:
- srcs/dsts are lists (NKI's coalesced form): one instruction per (src, dst) pair, in
  order (isa/collective.py: the same values). Lists of different lengths are E603.
- `priority=` (DMA QoS, NeuronCore-v4) and `name=` are accepted; priority has no effect on
  values and nkirun's collective cost model has no queues to order (docs/kernels.md).
- `rank_id()` returns a register (as NKI 0.6 does): a `scalar_offset`, a register_* operand
  or a runtime loop bound; never a Python number (E659).
- The implicit ring permutes take one tensor per channel and record one instruction per
  channel. The names NKI 0.6 documents that nkirun does not simulate (all_to_all_v,
  all_gather_v) are E601 when used.
"""
from __future__ import annotations

import types
from enum import Enum

from nkirun.source.kernel.unsupported import (NkiPackage, frame_loc, kernel_error,
                                              kernel_frame)


class rg_partition_op(Enum):  # noqa: N801  (NKI's spelling)
    """How ReplicaGroup.from_partition_op groups ranks [0, world_size): ranks with the same
    `op(rank, operand)` share a rank-list."""

    bitwise_and = "bitwise_and"
    div = "div"
    mod = "mod"


class ReplicaGroup:
    """`nki.collectives.ReplicaGroup`: the ranks a collective runs on, as rank-lists (each
    rank in one); the collective runs within each rank-list independently."""

    def __init__(self, rank_lists=()):
        self.rank_lists = [list(r) for r in rank_lists]

    @staticmethod
    def from_partition_op(world_size: int, op: rg_partition_op, operand: int):
        key = {rg_partition_op.bitwise_and: lambda r: r & operand,
               rg_partition_op.div: lambda r: r // operand,
               rg_partition_op.mod: lambda r: r % operand}[rg_partition_op(op)]
        lists: dict = {}
        for r in range(world_size):
            lists.setdefault(key(r), []).append(r)
        return ReplicaGroup(list(lists.values()))

    def __eq__(self, other):
        return isinstance(other, ReplicaGroup) and self.rank_lists == other.rank_lists

    def __hash__(self):
        return hash(tuple(map(tuple, self.rank_lists)))

    def __repr__(self) -> str:
        return f"ReplicaGroup({self.rank_lists})"


def _record(op: str, srcs, dsts, fields: dict, name) -> None:
    from nkirun.source.kernel.control import _tracer
    tracer, loc = _tracer(), frame_loc(kernel_frame(3))
    srcs, dsts = _listed(op, "srcs", srcs, loc), _listed(op, "dsts", dsts, loc)
    if len(srcs) != len(dsts):
        raise kernel_error("E603", f"nki.collectives.{op}: {len(srcs)} srcs but {len(dsts)} "
                           "dsts; each src has its dst", loc=loc)
    for src, dst in zip(srcs, dsts):
        values = {"src": src, "dst": dst, **fields}
        if name is not None:
            values["name"] = name
        tracer.emit(op, values, loc)


def _listed(op: str, key: str, value, loc) -> list:
    if isinstance(value, (list, tuple)):
        if not value:
            raise kernel_error("E603", f"nki.collectives.{op}: `{key}` is empty", loc=loc)
        return list(value)
    return [value]  # one tensor given without its list


def all_reduce(srcs, dsts, replica_group, op, priority=None, name=None):
    _record("all_reduce", srcs, dsts, {"replica_group": replica_group, "op": op}, name)


def all_gather(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    _record("all_gather", srcs, dsts, {"replica_group": replica_group,
                                       "collective_dim": collective_dim}, name)


def reduce_scatter(srcs, dsts, replica_group, collective_dim, op, priority=None, name=None):
    _record("reduce_scatter", srcs, dsts, {"replica_group": replica_group,
                                           "collective_dim": collective_dim, "op": op}, name)


def all_to_all(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    _record("all_to_all", srcs, dsts, {"replica_group": replica_group,
                                       "collective_dim": collective_dim}, name)


def collective_permute(srcs, dsts, source_target_pairs, priority=None, name=None):
    _record("collective_permute", srcs, dsts,
            {"source_target_pairs": [list(p) for p in source_target_pairs]}, name)


def collective_permute_implicit(srcs_by_channel, dsts_by_channel, replica_group,
                                channel_ids=(0,), priority=None, name=None):
    _ring("collective_permute_implicit",
          {"src": ("srcs_by_channel", srcs_by_channel),
           "dst": ("dsts_by_channel", dsts_by_channel)},
          channel_ids, {"replica_group": replica_group}, name)


def collective_permute_implicit_reduce(srcs0_by_channel, srcs1_by_channel, dsts_by_channel,
                                       replica_group, op, channel_ids=(0,), priority=None,
                                       name=None):
    _ring("collective_permute_implicit_reduce",
          {"src0": ("srcs0_by_channel", srcs0_by_channel),
           "src1": ("srcs1_by_channel", srcs1_by_channel),
           "dst": ("dsts_by_channel", dsts_by_channel)},
          channel_ids, {"replica_group": replica_group, "op": op}, name)


def _ring(op: str, lists: dict, channel_ids, fields: dict, name) -> None:
    """One instruction per channel, in channel order: channel i takes the one tensor of
    each `*_by_channel` list's i-th entry (NKI: no coalescing here)."""
    from nkirun.source.kernel.control import _tracer
    tracer, loc = _tracer(), frame_loc(kernel_frame(3))
    ids = [channel_ids] if isinstance(channel_ids, int) else list(channel_ids)
    if ids != list(range(len(ids))):
        raise kernel_error("E693", f"nki.collectives.{op}: channel_ids {ids}; NKI takes "
                           "consecutive channels from 0", hint="channel_ids=[0] or [0, 1]",
                           loc=loc)
    for key, (keyword, value) in lists.items():
        if not isinstance(value, (list, tuple)) or len(value) != len(ids):
            raise kernel_error("E603", f"nki.collectives.{op}: `{keyword}` holds one list per "
                               f"channel; {len(ids)} channel(s), got {value!r:.80}", loc=loc)
    for i, channel in enumerate(ids):
        values = {key: _one(op, f"{keyword}[{i}]", value[i], loc)
                  for key, (keyword, value) in lists.items()}
        values.update(fields, channel_id=channel)
        tracer.emit(op, {**values, **({"name": name} if name else {})}, loc)


def _one(op: str, key: str, value, loc):
    items = _listed(op, key, value, loc)
    if len(items) != 1:
        raise kernel_error("E603", f"nki.collectives.{op}: `{key}` holds exactly one tensor "
                           f"(NKI: no coalescing here), got {len(items)}", loc=loc)
    return items[0]


def collective_permute_implicit_current_processing_rank_id(iteration_id, replica_group,
                                                           channel_id=0, num_channels=None,
                                                           name=None):
    from nkirun.source.kernel.control import _ASSIGN, VirtualRegister, _name, _tracer
    tracer, loc = _tracer(), frame_loc(kernel_frame(2))
    reg = VirtualRegister(_name(tracer, loc, _ASSIGN, "rank"))
    step = iteration_id.name if isinstance(iteration_id, VirtualRegister) else iteration_id
    values = {"dst": reg.name, "iteration_id": step, "replica_group": replica_group,
              "channel_id": channel_id}
    if num_channels is not None:  # NKI 0.2's keyword (removed in 0.3): still checked
        values["num_channels"] = num_channels
    tracer.emit("collective_permute_implicit_current_processing_rank_id",
                {**values, **({"name": name} if name else {})}, loc)
    return reg


def rank_id(name=None):
    from nkirun.source.kernel.control import _ASSIGN, VirtualRegister, _name, _tracer
    tracer, loc = _tracer(), frame_loc(kernel_frame(2))
    reg = VirtualRegister(_name(tracer, loc, _ASSIGN, "rank"))
    tracer.emit("rank_id", {"dst": reg.name, **({"name": name} if name else {})}, loc)
    return reg


FUNCTIONS = (all_reduce, all_gather, reduce_scatter, all_to_all, collective_permute,
             collective_permute_implicit, collective_permute_implicit_reduce,
             collective_permute_implicit_current_processing_rank_id, rank_id)


def build_module() -> types.ModuleType:
    m = NkiPackage("nki.collectives", "nkirun's nki.collectives (docs/kernels.md, "
                                        "\"Collectives\")")
    m.ReplicaGroup, m.rg_partition_op = ReplicaGroup, rg_partition_op
    for f in FUNCTIONS:
        setattr(m, f.__name__, f)
    return m
