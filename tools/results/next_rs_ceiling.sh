# Prepared in session 43 (never run): what bounds the landed 16-row RS kernels (e90a367).
# Run after session43_call3.sh has checked the landed tree.  ~250 s with a cold start.
# Run as: OUT=$OUT bash tools/results/next_rs_ceiling.sh
#   tools/producer_ceiling.py over dense fp8_ds_mla and fp8 b128 h16 and sparse fp8_ds_mla
#   b128 h16: the full kernel; without wgmma (strip); with wgmma kept: nomath (the copying
#   warps and each raw tile's hand-over alone: the loads' floor), noconvert (the F2FPs of
#   each step gone: what the conversions cost), nocopy (no byte from DRAM: the math
#   warpgroup's own floor), nocopy+noconvert (its MMAs, ldmatrix and waits alone).
#   Session 43 measured 207.4 / 216.7 / 73.8 us full.  Read: nocopy near full = the math
#   warpgroup bounds (then two math warpgroups on alternate tiles, each converting only its
#   own tiles: predicted dense 216.7 -> 175-190); nomath near full = the loads bound (more
#   raw tiles, or the copying warps' lookups: nolookup); noconvert's share = the
#   conversions' cost in the math warpgroup.
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 240 python3 tools/producer_ceiling.py fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 \
  sparse_ds_mla_b128_sq1_h16 --keep-mma --ablate nomath,noconvert,nocopy,nocopy+noconvert > "$OUT/ceiling.txt" 2>&1
say "ceiling exit $?"
grep -v "^#" "$OUT/ceiling.txt" | cut -c1-160 >> "$L"
say done
