# Prepared in session 41 (never run): the forced-portable GPU files owed since session 40
# (~300 s).  Run as: OUT=$OUT bash tools/results/next_session42_call3.sh
. tools/results/device_steps.sh
begin_call
PORTABLE_TIMEOUT=240 portable dense sparse fp8
say done
