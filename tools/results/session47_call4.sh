# Session 47, call 4 (H200): the seesaw's guarded factors (call 3 ran on an H100): the far-below
# tests and the dense file's seesaw tests on the H200.
# Run as: OUT=$OUT bash tools/results/session47_call4.sh
. tools/results/device_steps.sh
begin_call
(PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py -k "far_below_zero or seesaw or running_max" > /tmp/t.log 2>&1; echo "[exit $?]" >> /tmp/t.log)
say "dense -k far_below_zero/seesaw/running_max: $(tail -2 /tmp/t.log | tr '\n' ' ')"; cp /tmp/t.log $OUT/
say done
