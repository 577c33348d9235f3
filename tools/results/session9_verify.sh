set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
w=/tmp/w; mkdir -p $w
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1
(timeout 150 python3 tools/hopper_check.py --schedule ring > $w/check.log 2>&1; echo "[exit $?]" >> $w/check.log) &
for n in sparse fp8 hardening; do
  (timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log) &
done
wait
grep "correctness:\|exit\|^FAIL\|sparse case 1[5-7]" $w/check.log | cut -c1-150
for n in sparse fp8 hardening; do echo "== $n"; tail -2 $w/$n.log; done
cp $w/*.log $OUT/
