"""The IR's operand model, below every stage that reads operands: a view of a tensor as
text (`t[:, 0:512]`, `t.ap([[512,128],[1,512]])`: operands.py, access.py) and as a
resolved box or access pattern (Resolved), indirect (runtime-indexed) DMA views
(indirect.py), and StridedView, the view model the Python front end's tensor handles use
(strided.py, reshape.py, basic_match.py; docs/views.md)."""
