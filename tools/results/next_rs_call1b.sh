# Prepared in session 42 (never run).  Run after next_rs_call1.sh only if its RS rows land
# above their predicted ranges (dense fp8_ds_mla b128 h16 over 215 us, fp8 over 200, sparse
# fp8_ds_mla h16 over 85): where the RS kernel's time goes, and two variants against it.
# ~420 s with a cold start.  Run as: OUT=$OUT bash tools/results/next_rs_call1b.sh
#   1. tools/producer_ceiling.py on the stack with raw_ahead, dense fp8_ds_mla and fp8
#      b128 h16 and sparse fp8_ds_mla b128 h16: the full kernel, without wgmma (strip), and
#      with wgmma kept: nomath (the copying warps and each raw tile's hand-over alone: the
#      loads' floor), noconvert (the 16 F2FP a step gone), nocopy (no byte from DRAM: the
#      math and hand-overs' floor), nocopy+noconvert.  Read: nomath near full = bound by the
#      loads (then more raw tiles in flight, or the copy warps' lookups: nolookup); nocopy
#      near full = bound by the math (then the variants below, or two math warpgroups on
#      alternate tiles); noconvert's share = what the conversions cost.
#   2. hopper_check narrow on the stack with wip_narrow_rs_three_groups.patch (three
#      fragment buffers, three MMA groups in flight: wgmma_wait<2>; 16 rows only), then the
#      three fp8 h16 rows, two rounds, on rs / rs + raw_ahead / rs + raw_ahead + three
#      groups.  Predicted: three groups -5 to -20% where nocopy showed the math bounding
#      (each S^T group is four HGMMAs chained on one accumulator, so two groups in flight
#      may leave the tensor pipe waiting on the chain), flat where nomath did.
. tools/results/device_steps.sh
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
STACK="next_narrow_rs_math.patch next_narrow_rs_sparse.patch"
patched_stack /tmp/rs rs $STACK
patched_stack /tmp/rsa rsa $STACK wip_narrow_rs_raw_ahead.patch
patched_stack /tmp/rs3 rs3 $STACK wip_narrow_rs_raw_ahead.patch wip_narrow_rs_three_groups.patch
(cd /tmp/rsa && PYTHONPATH=.:tests timeout 200 python3 tools/producer_ceiling.py fp8_ds_mla_b128_h16_s8192 \
   fp8_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16 --keep-mma --ablate nomath,noconvert,nocopy,nocopy+noconvert \
   > "$OUT/ceiling_rsa.txt" 2>&1)
say "ceiling exit $?"
grep -v "^#" "$OUT/ceiling_rsa.txt" | cut -c1-160 >> "$L"
TREES="/tmp/rs /tmp/rsa /tmp/rs3"
check_tree /tmp/rs3 rs3 narrow || { say "rs3 check failed: rows without it"; TREES="/tmp/rs /tmp/rsa"; }
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16"
bench_trees $TREES
say done
