#!/usr/bin/env bash
# Latency of xflow's `cpu` backend against cpu_ref and ONNX Runtime's CPU
# provider (all graph optimizations on), on zoo models, original and
# xflowc-optimized.  The three runtimes are timed in alternating rounds so
# that load from other processes on the machine falls on all of them; each
# round reports a median over --iters runs after 3 warm-up runs (cpu_ref,
# plain loops with nothing to warm, runs --ref-iters times without, in the
# first round only), and the table
# shows the median of the rounds and, in brackets, the spread of the
# rounds' medians as a measure of noise.  --base DIR also times the cpu
# backend of another build (an earlier commit) in the same rounds, on the
# same model files, for a before/after comparison.  --threads N runs every
# runtime on N threads (default: one per core); one thread is the steadier
# measure on a machine that other jobs share.  --stat min reports each
# round's fastest run instead of its median: on a busy machine the runs
# that other jobs did not interrupt.
#
#   benchmarks/cpu_vs_ort.sh [--build DIR] [--base DIR] [--rounds N] [--iters N] [--ref-iters N] [--threads N]
#                            [--stat median|min] [--omp-passive] [MODEL...]
#
# MODEL is a zoo name (default: resnet50 inception-v3 bert, those the zoo
# has; BERT is built with batch 1) or a self-contained .onnx file (no
# external data; symbolic dims taken as 1 by every runtime).  ONNX Runtime comes from the venv
# .venv-bench (benchmarks/setup-peers.sh when present, else created here).
#
# oneDNN here runs on GNU OpenMP, whose threads spin at every barrier: on a
# machine shared with other busy processes a spinning thread holds the core
# its partner needs, and latency grows several-fold.  --omp-passive runs
# the cpu backend with OMP_WAIT_POLICY=passive (threads sleep instead),
# which is what to use on shared machines; the table says which was used.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
base=
rounds=3
iters=10
ref_iters=1
omp_env=()
threads=$(nproc)
stat=median
models=()
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --ref-iters) ref_iters=$2; shift 2 ;;
    --omp-passive) omp_env+=(OMP_WAIT_POLICY=passive); shift ;;
    --threads) threads=$2; shift 2 ;;
    --stat) stat=$2; shift 2
        case $stat in median | min) ;; *) echo "cpu_vs_ort.sh: --stat takes median or min" >&2; exit 2 ;; esac ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "cpu_vs_ort.sh: unknown option $1" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
    esac
done
build=$(cd "$build" && pwd)
omp_env+=(OMP_NUM_THREADS="$threads")
if [ -n "$base" ]; then
    base=$(cd "$base" && pwd)
    [ -x "$base/tools/xflow-run" ] || { echo "cpu_vs_ort.sh: $base/tools/xflow-run not built" >&2; exit 1; }
fi
for tool in xflow-run xflow-zoo xflowc; do
    [ -x "$build/tools/$tool" ] || { echo "cpu_vs_ort.sh: $build/tools/$tool not built" >&2; exit 1; }
done
if ! "$build/tools/xflow-run" --list-backends | grep -qx cpu; then
    echo "cpu_vs_ort.sh: this build has no cpu backend (oneDNN was not found)" >&2
    exit 1
fi

venv=$root/.venv-bench
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import onnxruntime, numpy' 2>/dev/null; then
    if [ -x "$root/benchmarks/setup-peers.sh" ]; then
        "$root/benchmarks/setup-peers.sh"
    else
        python3 -m venv --system-site-packages "$venv"
        "$venv/bin/pip" install -q onnxruntime numpy
    fi
fi

if [ ${#models[@]} -eq 0 ]; then
    for m in resnet50 inception-v3 bert; do
        "$build/tools/xflow-zoo" --list | grep -q "^$m " && models+=("$m")
    done
fi

work=$(mktemp -d)
notes=()
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
spread() { sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.0f%%", (lo > 0 ? 100 * (hi - lo) / lo : 0)}'; }
xflow_ms() { # model backend iters warmup [build]
    env "${omp_env[@]}" "${5:-$build}/tools/xflow-run" "$1" --backend "$2" --iters "$3" --warmup "$4" -q 2>&1 |
        sed -n "s/.*$stat \([0-9.]*\) ms.*/\1/p"
}

printf '%s, %s cores, %s threads, %s; %d rounds of %d runs (cpu_ref: %d run), %s of each; cpu OpenMP wait: %s\n' \
    "$(date -u +%F)" "$(nproc)" "$threads" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" \
    "$rounds" "$iters" "$ref_iters" "$stat" "$(printf '%s\n' "${omp_env[@]}" | grep -q WAIT_POLICY && echo passive || echo default)"
printf '%-24s %16s %16s %16s %9s %9s' model "cpu_ref ms" "cpu ms" "ORT ms" "ref/cpu" "cpu/ORT"
[ -n "$base" ] && printf ' %16s %9s' "base cpu ms" "cpu/base"
printf '\n'
for m in "${models[@]}"; do
    if [[ $m == *.onnx ]]; then
        [ -f "$m" ] || { echo "cpu_vs_ort.sh: $m: no such file" >&2; exit 1; }
        name=$(basename "$m" .onnx)
        cp "$m" "$work/$name.onnx"
        m=$name
    else
        batch=()
        [ "$m" = bert ] && batch=(--batch 1)
        "$build/tools/xflow-zoo" "$m" "${batch[@]}" -o "$work/$m.onnx" > /dev/null
    fi
    variants=("$m")
    if "$build/tools/xflowc" "$work/$m.onnx" -o "$work/$m-opt.onnx" -q > "$work/xflowc.log" 2>&1; then
        variants+=("$m-opt")
    else
        echo "($m: xflowc failed: $(tail -1 "$work/xflowc.log"))"
    fi
    for v in "${variants[@]}"; do
        : > "$work/ref" ; : > "$work/cpu" ; : > "$work/ort" ; : > "$work/base"
        for ((r = 0; r < rounds; r++)); do
            # cpu_ref is two orders of magnitude slower: one round of it is enough
            if [ "$r" -eq 0 ] && [ "$ref_iters" -gt 0 ]; then
                xflow_ms "$work/$v.onnx" cpu_ref "$ref_iters" 0 >> "$work/ref"
            fi
            xflow_ms "$work/$v.onnx" cpu "$iters" 3 >> "$work/cpu"
            [ -z "$base" ] || xflow_ms "$work/$v.onnx" cpu "$iters" 3 "$base" >> "$work/base"
            # a model ONNX Runtime refuses (batch-first LSTMs, say) is timed without it
            if [ "$r" -eq 0 ] || [ -s "$work/ort" ]; then
                if "$venv/bin/python" "$root/benchmarks/ort_run.py" "$work/$v.onnx" --iters "$iters" \
                    --threads "$threads" > "$work/ort.out" 2> "$work/ort.err"; then
                    awk -v stat="$stat" '{print stat == "min" ? $4 : $2}' "$work/ort.out" >> "$work/ort"
                else
                    notes+=("$v: not timed on ONNX Runtime: $(grep -v '^ ' "$work/ort.err" | grep . | tail -1 |
                        sed 's/^onnxruntime[a-z_.0-9]*\.//' | cut -c1-400)")
                fi
            fi
        done
        ref=$( [ -s "$work/ref" ] && median < "$work/ref" || echo 0)
        cpu=$(median < "$work/cpu")
        printf '%-24s %8.1f [%5s] %8.2f [%5s]' "$v" "$ref" \
            "$( [ -s "$work/ref" ] && spread < "$work/ref" || echo -)" "$cpu" "$(spread < "$work/cpu")"
        if [ -s "$work/ort" ]; then
            ort=$(median < "$work/ort")
            printf ' %8.2f [%5s]' "$ort" "$(spread < "$work/ort")"
        else
            printf ' %16s' "not run"
        fi
        printf ' %8.1fx' "$(echo "$ref $cpu" | awk '{print $1 / $2}')"
        if [ -s "$work/ort" ]; then
            printf ' %8.2fx' "$(echo "$cpu $ort" | awk '{print $1 / $2}')"
        else
            printf ' %9s' -
        fi
        if [ -n "$base" ]; then
            old=$(median < "$work/base")
            printf ' %8.2f [%5s] %8.2fx' "$old" "$(spread < "$work/base")" "$(echo "$cpu $old" | awk '{print $1 / $2}')"
        fi
        printf '\n'
    done
done
for note in "${notes[@]}"; do echo "$note"; done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
