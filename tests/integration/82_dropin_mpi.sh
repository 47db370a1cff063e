# 82_dropin_mpi.sh — every rank of an MPI launch under jobscope (issue 14
# point 7, docs/mpi.md), with a real mpirun (Debian's openmpi-bin):
# per-rank files through %r, a shared file with --job, and a job id shared
# by the ranks of one launch when no batch system gives one.
W=$HELPERS/workload
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 4"

# the batch system's id would hide the launcher's
_no_batch() { env -u SLURM_JOB_ID -u SLURM_JOBID -u PBS_JOBID -u LSB_JOBID -u JOB_ID -u CONDOR_JOBID \
                  -u COBALT_JOBID -u FLUX_JOB_ID -u PEGASUS_DAG_JOB_ID -u _CONDOR_JOB_AD "$@"; }

test_mpi_ranks_write_one_file_each_and_share_the_launch_job_id() {
    need mpirun || return $?
    _no_batch $MPIRUN "$JS" monitor -i 0.1 -o "$T/ev-%r.jsonl" -- "$W" burn 100 2>err.txt || { cat err.txt; return 1; }
    for r in 0 1 2 3; do
        assert_file "ev-$r.jsonl" || return 1
        assert_eq "$(jq_py 'sorted(set(e["rank"] for e in ev))' ev-$r.jsonl)" "[$r]" "rank field in ev-$r" || return 1
        assert_ge "$(jq_py 'len(samples)' ev-$r.jsonl)" 2 || return 1
    done
    jobs=$(cat ev-*.jsonl > all.jsonl; jq_py 'sorted(set(e["job_id"] for e in ev))' all.jsonl)
    assert_match "$jobs" '^\["mpi-[^"]+"\]$' "one job id for the launch, from the launcher" || return 1
    assert_eq "$(jq_py 'sorted(set("mpi-" + e["launch"] for e in ev))' all.jsonl)" "$jobs" "the launch annotation" || return 1
    # a second launch is another job
    _no_batch $MPIRUN "$JS" monitor -i 0.1 -o "$T/second-%r.jsonl" -- true 2>/dev/null || return 1
    assert_ne "$(jq_py 'ev[0]["job_id"]' second-0.jsonl)" "$(jq_py 'ev[0]["job_id"]' ev-0.jsonl)"
}

test_mpi_ranks_sharing_a_file_and_a_job_have_unique_rank_seq_pairs() {
    need mpirun || return $?
    _no_batch $MPIRUN "$JS" run -i 0.05 --job shared -o "$T/all.jsonl" -- "$W" burn 100 2>err.txt || { cat err.txt; return 1; }
    python3 - all.jsonl <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert {e["job_id"] for e in ev} == {"shared"}
assert {e["rank"] for e in ev} == {0, 1, 2, 3}, {e["rank"] for e in ev}
keys = [(e["job_id"], e["rank"], e["seq"]) for e in ev]
assert len(keys) == len(set(keys)), "duplicate (job, rank, seq)"
for r in range(4):
    seqs = sorted(e["seq"] for e in ev if e["rank"] == r)
    assert seqs == list(range(1, len(seqs) + 1)), (r, seqs)
    assert sum(e["event"] == "jobscope.end" for e in ev if e["rank"] == r) == 1
PY
}

test_output_names_expand_rank_host_job_and_pid() {
    OMPI_COMM_WORLD_RANK=5 "$JS" run -i 0.1 --job j/1 -o "$T/e-%r-%h-%j-%%.jsonl" -o "$T/p-%p.jsonl" -- true || return 1
    assert_file "e-5-$(hostname)-j_1-%.jsonl" || return 1
    assert_eq "$(ls p-*.jsonl | grep -cE '^p-[0-9]+\.jsonl$')" 1 || return 1
    assert_ne "$(ls p-*.jsonl)" "p-%p.jsonl"
}

# Under a batch system the job id is the batch's; two launches (srun steps,
# two mpiruns) in one batch job are told apart by "launch".
test_mpi_launch_tells_steps_of_one_batch_job_apart() {
    SLURM_JOB_ID=77 SLURM_STEP_ID=2 SLURM_PROCID=3 "$JS" run -o ev.jsonl -- true || return 1
    assert_eq "$(jq_py 'sorted(set((e["job_id"], e["launch"], e["rank"]) for e in ev))' ev.jsonl)" '[["77", "77.2", 3]]' || return 1
    env -u SLURM_STEP_ID -u SLURM_STEPID -u PMIX_NAMESPACE -u OMPI_MCA_ess_base_jobid -u PMI_KVSNAME \
        SLURM_JOB_ID=77 "$JS" run -o ev2.jsonl -- true || return 1
    assert_eq "$(jq_py 'any("launch" in e for e in ev)' ev2.jsonl)" false "no launcher, no launch field"
}
