export PYTHONPATH=.:tests PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > $L
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 fp8_ds_mla_b128_h16_s8192"
timeout 240 python3 tools/producer_ceiling.py $C --ablate nocopy,nocopy+noconvert+nostore >> $L 2>&1; echo "[a exit $?]" >> $L
timeout 240 python3 tools/producer_ceiling.py $C --keep-mma --ablate nocopy,nocopy+noconvert+nostore,noconvert+nostore >> $L 2>&1; echo "[b exit $?]" >> $L
cat $L
