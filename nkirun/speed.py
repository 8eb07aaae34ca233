"""Every shortcut nkirun takes for speed, each beside the plain path it must equal.

The switches below are on; set one False (tests do, with monkeypatch) and that stage takes
its plain path, the definition. tests/kernel/test_call_forms.py traces, checks, runs and
costs kernels with each switch off and requires the same program, diagnostics, results
and schedule.

| switch          | the shortcut                                           | the plain twin                                |
|-----------------|--------------------------------------------------------|-----------------------------------------------|
| CALL_FORMS      | a kernel call of a known call-site form is built from   | every call converted afresh                    |
|                 | the form's first instance (source/kernel/call_forms.py; |                                               |
|                 | keyword values: Python's and NumPy's scalars, tokens)   |                                               |
| FORM_ARGS       | such an instruction keeps only its tensor names         | an args dict of its own                       |
|                 | (source/forms.py FormArgs)                              |                                               |
| ALLOC_PLANS     | an nl.ndarray of a known layout reuses the checks of    | every allocation checked afresh               |
|                 | the first (tensor.rec_of_kind)                          |                                               |
| SIMPLE_CALLS    | a keyword-only nki.isa call, or one by position with dst| the general path (isa_shim.py)                |
|                 | first (NKI 0.2+), skips the general binding             |                                               |
| LOWERED_INDEX   | a view's IR index worked out when the view is made      | worked out when an instruction first uses it  |
| LAZY_OPERANDS   | a form instance's Operands made on first read           | every bound instruction's Operands made by    |
|                 | (checker/intern.py PendingOperands)                     | bind                                          |
| AFFINE_OWN_SHAPE| an index array's affinity checked over its own shape    | over the broadcast shape of the whole index    |
|                 | (source/kernel/legacy.py affine)                        | (affine_plain)                                |
| INDEX_FORMS     | an index array (nl.arange, its +, -, * with ints, its   | every index array proved affine over its      |
|                 | [:, None]) carries its affine form; a view indexed with | values (index_arrays.advanced_pattern_plain)  |
|                 | such arrays is built from the forms                     |                                               |
|                 | (source/kernel/index_forms.py)                          |                                               |
| INDEX_MEMO      | an index expression of ints and form arrays (nl.arange,| every nl.arange, indexing and arithmetic of  |
|                 | its [:, None], + - * with ints) made once and shared:   | index arrays makes a new array                |
|                 | index arrays are read-only, their data frozen           | (legacy.arange_plain, IndexArray.getitem_plain,|
|                 | (source/kernel/legacy_mask.py index_memo); each shared  | ufunc_plain)                                  |
|                 | array also remembers its own indexings and + - * with   |                                               |
|                 | ints, which skip NumPy's dispatch (IndexArray._with_int)|                                               |
| INDIRECT_ROWS   | an indirect view's element offsets computed once per    | computed at each of the instruction's uses     |
|                 | index values (runner/indirect_rows.py)                  | (rows_plain)                                   |
| PSUM_BY_FORM    | the PSUM hazard pass reads a form instance's PSUM       | every instance's Operands made and read       |
|                 | operands through its form (checker/psum.py             |                                               |
|                 | _form_operands): its Operands stay unmade               |                                               |
| CORES_BY_NAMES  | a two-core program's ownership (E633) and race (W630)  | every instruction's accesses() read (its      |
|                 | rules read an instruction's tensor names (names_plan)  | form instance's Operands made)                |
|                 | and its accesses only where a name may matter: another |                                               |
|                 | core's tensor, a shared-HBM one (checker/cores.py)     |                                               |
| STREAMED_JSON   | --format json written as it is made, a long list's rows | json.dumps(indent=2) of the whole document    |
|                 | one compact line each (show/json_out.py)                |                                               |
| JSON_ROWS       | cost --format json's instruction rows spelled from the  | views.table's dicts through the streamed      |
|                 | slots (show/cost_json.py)                           | writer                                        |
| FORM_PLANS      | the scheduler places a form instance from its form's    | every instruction through                     |
|                 | plan: what all instances share worked out once          | _Scheduler.place_plain                        |
|                 | (schedule/fast_place.py)                                |                                               |
| DEAD_HISTORIES  | a tensor's access history dropped once no later         | every history kept to the end                 |
|                 | instruction accesses it (schedule/history.py last_uses) |                                               |
| SHARED_DMA_SERVERS | DMA engines with equal histories share one Server,   | every engine booked on its own Server         |
|                 | booked once per transfer (schedule/dma.py               |                                               |
|                 | _book_grouped)                                          |                                               |
| DMA_GROUP_PLANS | ... and a transfer's grouping of engines into Servers  | the grouping worked out for every transfer    |
|                 | kept per DMA plan while no engine changes Server      | (dma.py DmaEngines._book_shares)              |
|                 | (schedule/dma.py _plan_of, _planned)                    |                                               |
| DMA_ONE_GAP     | a DMA Server booking that fits in the gap it starts in | every booking through the gap-filling loop    |
|                 | inserted there at once (schedule/dma.py Server.book)   | (dma.py Server._fill_gaps)                    |
| CORE_PLANS      | a two-core schedule's cores share their FormPlans; a   | each core plans its forms; every slot's facts |
|                 | slot's facts moved to its core once per facts          | interned afresh (schedule/cores.py            |
|                 | (schedule/cores.py facts_on_core)                      | schedule_cores)                               |
| BOX_INDEX       | the dependence scan visits only the boxes an index says | every live access of the tensor compared      |
|                 | may overlap, a read's answer kept while the tensor's    | (fast_place.ready_of)                         |
|                 | writes do not change (schedule/box_index.py)            |                                               |
| SPILLS_FROM_CHECK | `cost` of a checked program without W047 skips the  | the live sets worked out again for the spills |
|                 | compiler's spills: the check found every live set       | (schedule/spills.py spill_events)             |
|                 | within capacity (pipeline/commands.py cost)             |                                               |
| WIDEN_ONCE      | a planned run widens a 16-bit or fp8 matmul operand     | each call widens its operands into scratch    |
|                 | into a float32 copy once per write of its view, not per | arrays (isa/common.f32_operand; tests/runner/ |
|                 | read (runner/plan_widen.py)                             | test_plan_widen.py)                           |
| BF16_SHIFT      | a bfloat16 operand widened to float32 by shifting its   | NumPy's (ml_dtypes') cast (hw/dtypes.py       |
|                 | bits (hw/dtypes.py widen_into)                          | widen_into_plain; tests/hw/test_widen_bits.py)|
| SAME_TRACE_CHECK| a simulate() call that traced the same program as the   | every call checked afresh (pipeline/reuse.py; |
|                 | object's last call (every field, locations included:    | same_program_plain; tests/pipeline/           |
|                 | reuse.same_program) reuses that call's check            | test_check_reuse.py)                          |
| KEPT_PLAN       | ... and, from a program's second call, runs its         | every call compiles its plan (tests/runner/   |
|                 | execution plan again when no step of it is plain, the   | test_plan_keep.py)                            |
|                 | inputs copied into its arrays (runner/plan_keep.py)     |                                               |
| FILL_BITS       | a planned fill (memset, a slot's reset) sets the stored | NumPy's broadcast copy (hw/dtypes.py          |
|                 | bits through an unsigned view (hw/dtypes.py filler)     | filler_plain; tests/hw/test_widen_bits.py)    |
| UNREAD_FILLS    | the fill of a tile written in parts is left out of the  | every such fill made (tests/runner/           |
|                 | plan when no step reads it: the tile is written in full | test_plan_unread.py)                          |
|                 | or dies, never handed to the plain path                 |                                               |
|                 | (runner/plan_writes.py PlannedWrites.unread_fills)      |                                               |
| WIDEN_FROM_SOURCE | a matmul operand inside a tile loaded by a bit copy is| each view widened from the tile, every copy   |
|                 | widened from the copy's source (one float32 copy per    | made (tests/runner/test_plan_source.py)       |
|                 | source view while it is not written); a copy nothing    |                                               |
|                 | else reads is left out (runner/plan_source.py)          |                                               |
|                 | (in a plan simulate() keeps: execute_planned follow=)   |                                               |
| COPY_CHAINS     | nl.broadcast_to's dma_copy chain across partitions     | each step through convenience._emit (the      |
|                 | recorded from its call site's plan: each step's form    | loop in convenience.broadcast_to; tests/      |
|                 | (source/kernel/copy_chains.py)                          | kernel/test_copy_chains.py)                   |
| OFFSET_FAMILIES | bind skips the rules of an instruction equal to a       | every rule applied to every instruction not   |
|                 | checked one up to tensor names and view offsets when a  | interned by value (checker/bind.py            |
|                 | twin run saw the rules read none of the offsets that    | _apply_rules; bind(..., fast=False); tests/   |
|                 | differ (checker/families.py); its names plan is the     | checker/test_offset_families.py)              |
|                 | family's                                                |                                               |
| BLOCK_TILES     | a legacy block buffer's tiles after its first made from | each tile an nl.ndarray of its own            |
|                 | the call site's allocation plan, the site found once    | (tile_ops.block_tiles_plain; tests/kernel/    |
|                 | (source/kernel/tile_ops.py block_tiles)                 | test_block_tiles.py)                          |

Shortcuts chosen by an argument rather than a switch, each tested against its twin:
runner/plan.py (a planned run; `interpret.execute(plan=False)`: runner/plain.py, tests/
runner/test_plan.py; tiles written in parts decided while planning, runner/plan_writes.py,
and the plan forms of nc_matmul, tensor_tensor, tensor_copy and dma_copy across dtypes:
tests/runner/test_plan_writes.py), checker/intern.py (`bind(..., fast=False)`, tests/checker/
test_fast_bind.py), isa/fast/ (each module beside the instruction's plain `definition`),
runner/shadow_native.py (the C module beside the NumPy comparisons, tests/runner/
test_shadow_native.py), runner/shadow_bits.py (bfloat16 on the bits beside the plain
helpers). Memos, each beside its plain definition: source/kernel/views.py `index_view`
(keys of ints, slices, nl.ds and index arrays carrying their affine form, as one flat
tuple after the layout token the handle keeps, `_layout_token`) and `view_method` (.ap,
.reshape, ... with plain arguments, on the same token), twins `index_view_plain` and
`view_method_plain` (tests/kernel/test_fast_views.py, also the tokens they hand out).
The scheduler's history update, schedule/history.py `record` (a read inline, a tensor's
first access made in place), beside `record_plain` (AccessHistory.read and .wrote;
tests/schedule/test_record.py); schedule/fast_place.py `scalar_alt` beside
placement.on_scalar (tests/schedule/test_form_plans.py, FORM_PLANS off).
A dst-first call by position decides `legacy.dst_first`'s keyword part once per count and
keywords (isa_shim._positional_plan; tests/kernel/test_call_forms.py compares the two). Under LAZY_OPERANDS the scheduler reads a form instance's pending
Operands raw (schedule/scheduler.py `place`, placement.on_scalar's cycles per form); with
the switch off every instance has its Operands and the same schedule comes out
(tests/kernel/test_call_forms.py).

Start-up (issue 28): records.py `record` makes a dataclass without compiling its
__repr__/__eq__/__hash__ (twin: `dataclasses.dataclass`, tests/test_records.py);
source/yaml_import.py imports PyYAML with its pure-Python reader's character pattern made
on first use (`LazyPattern`; twin: `import yaml`, tests/source/test_yaml_import.py); the
`nkirun` command freezes its objects at exit so that the shutdown's full collection skips
them (gc_policy.skip_exit_collection).
"""
CALL_FORMS = True
FORM_ARGS = True
ALLOC_PLANS = True
SIMPLE_CALLS = True
LOWERED_INDEX = True
LAZY_OPERANDS = True
STREAMED_JSON = True
JSON_ROWS = True
AFFINE_OWN_SHAPE = True
INDEX_FORMS = True
INDEX_MEMO = True
INDIRECT_ROWS = True
PSUM_BY_FORM = True
CORES_BY_NAMES = True
FORM_PLANS = True
DEAD_HISTORIES = True
WIDEN_ONCE = True
SHARED_DMA_SERVERS = True
DMA_GROUP_PLANS = True
DMA_ONE_GAP = True
CORE_PLANS = True
BOX_INDEX = True
SPILLS_FROM_CHECK = True
BF16_SHIFT = True
SAME_TRACE_CHECK = True
KEPT_PLAN = True
FILL_BITS = True
UNREAD_FILLS = True
WIDEN_FROM_SOURCE = True
COPY_CHAINS = True
OFFSET_FAMILIES = True
BLOCK_TILES = True
