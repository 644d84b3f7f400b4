#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Regenerates the seed corpus for the trace fuzz target in
# tests/fuzz/corpus/trace.  The generated files are committed; run this only
# to change them:  sh tests/fuzz/make-corpus-trace.sh [OUTDIR]
# (seeds the fuzzer found are committed beside them, named found-*; this
# script leaves those alone).
#
# Each seed is one control byte (see tests/fuzz/fuzz-trace.c: bits 0-2 the
# reader and format, bit 3 skip_bad, bits 4-5 the machine size, bits 6-7
# gzip done by the target) followed by the file: a small valid trace of
# each format the readers know, and malformed ones (bad and huge numbers,
# missing columns, broken quoting, bad UTF-8, control characters,
# truncated JSON, corrupt and truncated gzip, an overlong line).

set -eu

out=${1:-$(dirname "$0")/corpus/trace}
mkdir -p "$out"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# ctl VALUE: the control byte.
ctl() { printf "\\$(printf '%03o' "$1")"; }

# Control bytes: reader/format in bits 0-2, options above.
AUTO=0 NATIVE=1 OPENB=2 ALI2018=3 GOOGLE=4 NODES=5 AUTO_VM=6
SKIP=8 SMALL=16 LARGE=32 BADSIZE=48 GZ=64 GZ2=128 GZCUT=192

seed() { name=$1; shift; "$@" >"$out/$name"; }

jsonl() {
	cat <<'EOF'
{"id":"web-1","class":"container","arrival_ms":0,"duration_ms":60000,"cpu_milli":500,"memory_bytes":1073741824}
{"id":"db-vm","class":"vm","arrival_ms":1000,"duration_ms":null,"cpu_milli":4000,"memory_bytes":17179869184,"priority":10,"labels":"tier=db"}
{"id":"train,\"x\"","class":"baremetal","arrival_ms":1000,"duration_ms":3600000,"cpu_milli":96000,"memory_bytes":412316860416,"gpu_milli":8000,"gpu_model":"A100|H800"}
{"id":"late","arrival_ms":500,"end_ms":900,"cpu_milli":1,"memory_bytes":1,"class":"","labels":"","gpu_model":null}
EOF
}
native_csv() {
	cat <<'EOF'
id,class,arrival_ms,duration_ms,cpu_milli,memory_bytes,gpu_milli,gpu_model,priority,labels
web-1,container,0,60000,500,1073741824,0,,0,
db-vm,vm,1000,,4000,17179869184,0,,10,tier=db
"train,""x""",baremetal,1000,3600000,96000,412316860416,8000,A100|H800,0,
batch-7,spot,2500,0,250,268435456,0,,-1,
EOF
}
openb_pods() {
	cat <<'EOF'
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
openb-pod-0001,6000,12288,1,460,,LS,Running,427,12537496,427
openb-pod-0002,4000,8192,2,,V100M16|V100M32,BE,Succeeded,1200.5,1300.25,1201
openb-pod-0003,88000,327680,8,1000,A10,Guaranteed,Pending,9000,,
EOF
}
openb_nodes() {
	cat <<'EOF'
sn,cpu_milli,memory_mib,gpu,model
openb-node-0001,64000,262144,2,P100
openb-node-0002,96000,786432,8,V100M32
openb-node-0003,64000,262144,2,P100
openb-node-0004,96000,393216,0,
EOF
}
batch_task() {
	cat <<'EOF'
M1,3.0,j_3,1,Terminated,157213,157295,100.0,0.3
R2_1,1.0,j_3,1,Terminated,157300,157310,50,0.25
M5_3_4,2,j_9,1,Running,200000,0,200.0,1.5
EOF
}
container_meta() {
	cat <<'EOF'
c_1,m_2556,0,app_5052,started,400,400,1.56
c_1,m_2556,287942,app_5052,started,400,400,1.56
c_2,m_962,0,app_8125,started,800,800,3.13
c_3,m_7,12.5,,started,50,100,100
EOF
}
task_events() {
	cat <<'EOF'
0,2,3418309,0,4155527081,0,user,3,9,0.125,0.07446,0.0004244,0
0,2,3418309,1,,0,user,3,9,0.125,0.07446,0.0004244,0
600000000,,3418309,0,4155527081,1,user,3,9,0.125,0.07446,0.0004244,0
600500000,,3418309,1,,7,user,3,9,0.25,,0,0
700000000,,3418309,0,4155527081,4,user,3,9,,,,
800000000,,3418309,0,,0,user,3,2,1,1,0,0
900000000,,3418309,0,,5,user,3,2,,,,
950000000,,3418309,0,,0,user,3,2,0.5,0.5,0,0
9223372036854775807,,3418309,1,,4,user,3,9,,,,
EOF
}

s_native_jsonl() { ctl $NATIVE; jsonl; }
s_native_jsonl_auto_vm() { ctl $AUTO_VM; jsonl; }
s_native_csv() { ctl $AUTO; native_csv; }
s_native_csv_bom_crlf() { ctl $AUTO; printf '\357\273\277'; native_csv | sed 's/$/\r/'; }
s_native_csv_end_ms() {
	ctl $NATIVE
	printf 'labels, id ,end_ms,arrival_ms,memory_bytes,cpu_milli,class\n'
	printf '"a=1,b=2", w1 ,10,5,1,1,vm\n'
	printf '," w2 ",,5,1,1,\n'
}
s_native_end_and_duration() {
	ctl $((NATIVE | SKIP))
	printf '{"id":"a","arrival_ms":5,"end_ms":4,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"b","arrival_ms":5,"end_ms":6,"duration_ms":1,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"c","arrival_ms":5,"end_ms":6,"duration_ms":null,"cpu_milli":1,"memory_bytes":1,"gpu_model":""}\n'
	printf '{"id":"d","arrival_ms":5,"cpu_milli":1,"memory_bytes":1,"gpu_model":7,"labels":null}\n'
}
s_native_csv_end_before_arrival() {
	ctl $((NATIVE | SKIP))
	printf 'id,arrival_ms,end_ms,cpu_milli,memory_bytes\na,5,4,1,1\nb,5,5,1,1\nc,5,,1,1\n'
}
s_native_csv_duration_and_end() { ctl $AUTO; printf 'id,arrival_ms,end_ms,duration_ms,cpu_milli,memory_bytes\n'; }
s_native_gzip() { ctl $((AUTO | GZ)); jsonl; }
s_native_gzip_two_members() { ctl $((NATIVE | GZ2)); native_csv; }
s_native_gzip_cut() { ctl $((AUTO | GZCUT)); jsonl; }
s_native_jsonl_truncated() {
	ctl $AUTO
	jsonl | head -c 300
}
s_native_jsonl_truncated_skip() {
	ctl $((AUTO | SKIP))
	printf '{"id":"a","arrival_ms":1,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"b","arrival_ms":2,"cpu_milli":1,"memo\n'
	printf '{"id":"c","arrival_ms":3,"cpu_milli":1,"memory_bytes":1\n'
	printf '{"id":"d","arrival_ms":4,"cpu_milli":1,"memory_bytes":1}trailing\n'
	printf '[1,2,3]\n"str"\n{"id":"e","arrival_ms":5,"cpu_milli":1,"memory_bytes":1}\n'
}
s_native_jsonl_dup_keys() {
	ctl $((NATIVE | SKIP))
	printf '{"id":"a","id":"b","arrival_ms":1,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"a","\\u0069d":"b","arrival_ms":1,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"c","arrival_ms":1,"cpu_milli":1,"memory_bytes":1,"x":{"id":1}}\n'
	printf '{"id":"d","arrival_ms":1,"cpu_milli":1,"memory_bytes":1,"colour":"red"}\n'
}
s_native_jsonl_huge_numbers() {
	ctl $((NATIVE | SKIP))
	printf '{"id":"a","arrival_ms":18446744073709551616,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"b","arrival_ms":-9223372036854775809,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"c","arrival_ms":1.5,"cpu_milli":1e3,"memory_bytes":1}\n'
	printf '{"id":"d","arrival_ms":316224000000,"duration_ms":1,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"e","arrival_ms":0,"cpu_milli":1000000001,"memory_bytes":1152921504606846977}\n'
	printf '{"id":"f","arrival_ms":0,"cpu_milli":1,"memory_bytes":1,"priority":2147483648}\n'
	printf '{"id":"g","arrival_ms":5,"end_ms":4,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"h","arrival_ms":null,"cpu_milli":"1","memory_bytes":true}\n'
	printf '{"id":"i","arrival_ms":316224000000,"cpu_milli":1000000000,"memory_bytes":1152921504606846976,"gpu_milli":1000000,"priority":-2147483648}\n'
}
s_native_jsonl_escapes() {
	ctl $NATIVE
	printf '{"id":"caf\\u00e9 \\"q\\" \\\\ /","arrival_ms":1,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"nul\\u0000cut","arrival_ms":2,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"lone\\ud800","arrival_ms":3,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"deep","arrival_ms":4,"cpu_milli":1,"memory_bytes":1,"labels":[[[[[[[[[[1]]]]]]]]]]}\n'
}
s_native_bad_utf8() {
	ctl $((AUTO | SKIP))
	printf '{"id":"\377\376\300\200","arrival_ms":1,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"\355\240\200","arrival_ms":1,"cpu_milli":1,"memory_bytes":1,"labels":"k=\303"}\n'
}
s_native_control_chars() {
	ctl $((AUTO | SKIP))
	printf 'id,arrival_ms,cpu_milli,memory_bytes,labels\n'
	printf 'a\001b,1,1,1,\n'
	printf 'c,1,1,1,k=\033[31m\n'
	printf '"d\te",1,1,1,\n'
	printf 'f\177,1,1,1,\n'
	printf 'g,1,1,1,k=v\0hidden\n'
	printf 'h,1,1,1,ok\r\n'
}
s_native_csv_bad_numbers() {
	ctl $((NATIVE | SKIP))
	printf 'id,arrival_ms,cpu_milli,memory_bytes,duration_ms,priority\n'
	printf 'a,1e3,1,1,,\n'
	printf 'b,0x10,1,1,,\n'
	printf 'c,--1,1,1,,\n'
	printf 'd,1.2.3,1,1,,\n'
	printf 'e,.,1,1,,\n'
	printf 'f,-0,+5,1,,\n'
	printf 'g,1,1,1,-5,\n'
	printf 'h,1,1,1,,2147483648\n'
	printf 'i,NaN,inf,1,,\n'
	printf 'j, 12 .5,1,1,,\n'
	printf 'k,0.4999,1.5,0.5,,\n'
}
s_native_csv_huge_numbers() {
	ctl $((NATIVE | SKIP))
	printf 'id,arrival_ms,cpu_milli,memory_bytes,duration_ms\n'
	printf 'a,99999999999999999999,1,1,\n'
	printf 'b,9223372036854775807,1,1,\n'
	printf 'c,316224000000,1,1,1\n'
	printf 'd,316224000000,1,1,0\n'
	printf 'e,0,1000000001,1,\n'
	printf 'f,0,1,1152921504606846977,\n'
	printf 'g,0.00000000000000000000000000000001,1,1,\n'
	printf 'h,9223372036854775808,1,1,\n'
}
s_native_csv_missing_columns() {
	ctl $((AUTO | SKIP))
	printf 'id,arrival_ms,cpu_milli,memory_bytes,gpu_model\n'
	printf 'a,1,1\n'
	printf 'b,1,1,1,A100,extra\n'
	printf ',1,1,1,\n'
	printf 'c,,1,1,\n'
	printf 'd,1,1,1,\n'
}
s_native_csv_no_memory_column() { ctl $AUTO; printf 'id,arrival_ms,cpu_milli\na,1,1\n'; }
s_native_csv_header_errors() {
	ctl $NATIVE
	printf 'id,arrival_ms,cpu_milli,memory_bytes,duration_ms,end_ms,id\n'
}
s_native_csv_broken_quotes() {
	ctl $((NATIVE | SKIP))
	printf 'id,arrival_ms,cpu_milli,memory_bytes\n'
	printf '"a,1,1,1\n'
	printf 'b"c,1,1,1\n'
	printf '"d" x,1,1,1\n'
	printf '"e""",1,1,1\n'
	printf '" f ",1,1,1\n'
}
s_native_csv_too_many_fields() {
	ctl $AUTO
	printf 'id,arrival_ms,cpu_milli,memory_bytes\n'
	i=0
	while [ $i -lt 70 ]; do printf 'x,'; i=$((i + 1)); done
	printf 'x\n'
}
s_openb_pod_list() { ctl $OPENB; openb_pods; }
s_openb_pod_list_auto_small_machine() { ctl $((AUTO | SMALL)); openb_pods; }
s_openb_pod_list_bad() {
	ctl $((OPENB | SKIP))
	printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,creation_time,deletion_time\n'
	printf 'p1,1,1,1,1001,,LS,5,4\n'
	printf 'p2,1,1099511627776,1,1,,LS,5,6\n'
	printf 'p3,1,1,1001,1000,,LS,5,6\n'
	printf 'p4,1,1,1,1,,LS,316224000.001,\n'
	printf 'p5,1,1,1,1,,\001,5,6\n'
	printf 'p6,1,1,1000,1000,,,316224000,316224000\n'
	printf 'p7,1,1,1,1,,,9223372036854775.8079,\n'
	printf 'p8,1,1,1,1,,,92233720368547758,\n'
	printf 'p9,1,1,1,1,,,9223372036854775807.5,\n'
}
s_openb_node_list() { ctl $NODES; openb_nodes; }
s_openb_node_list_bad() {
	ctl $((NODES | SKIP))
	openb_nodes
	printf 'n5,0,1,0,\nn6,1,0,0,\nn7,abc,1,0,\nn8,1,1,1001,\nn9,1,1099511627776,0,\n'
	printf 'n10,1,1,0,M\001\nn11,1,1\nn12,1,1099511627775,1000,"x,y"\n'
}
s_openb_node_list_no_cpu() { ctl $NODES; printf 'sn,memory_mib\nn1,1\n'; }
s_openb_node_list_as_trace() { ctl $AUTO; openb_nodes; }
s_alibaba2018_batch_task() { ctl $ALI2018; batch_task; }
s_alibaba2018_batch_task_auto() { ctl $((AUTO | LARGE)); batch_task; }
s_alibaba2018_batch_task_many() {
	ctl $ALI2018
	printf 'M1,3000.0,j_1,1,Terminated,100,200,100.0,0.3\n'
}
s_alibaba2018_batch_task_bad() {
	ctl $((ALI2018 | SKIP))
	batch_task
	printf 'M2,1.5,j_1,1,Terminated,1,2,1,1\n'
	printf 'M3,0,j_1,1,Terminated,1,2,1,1\n'
	printf 'M4,100001,j_1,1,Terminated,1,2,1,1\n'
	printf 'M5,1,j_1,1,Terminated,5,4,1,1\n'
	printf 'M6,1,j_1,1,Terminated,1,2,1,100.000001\n'
	printf ',1,j_1,1,Terminated,1,2,1,1\n'
	printf 'M7,1,,1,Terminated,1,2,1,1\n'
	printf 'M8,1,j_1,1,Terminated,1,2,1\n'
}
s_alibaba2018_container_meta() { ctl $ALI2018; container_meta; }
s_alibaba2018_container_meta_small() { ctl $((AUTO | SMALL | SKIP)); container_meta; printf 'c_4,m,1,a\002,s,1,1,1\n'; }
s_google2011_task_events() { ctl $GOOGLE; task_events; }
s_google2011_task_events_auto_large() { ctl $((AUTO | LARGE)); task_events; }
s_google2011_bad() {
	ctl $((GOOGLE | SKIP))
	task_events
	printf '1,,1.5,0,,0,u,0,0,0.1,0.1,0,0\n'
	printf '1,,1,x,,0,u,0,0,0.1,0.1,0,0\n'
	printf '1,,1,0,,9,u,0,0,0.1,0.1,0,0\n'
	printf '1,,,0,,0,u,0,0,0.1,0.1,0,0\n'
	printf '1,,1,0,,0,u,0,0,1.1,0.1,0,0\n'
	printf '9999999999999999999,,1,0,,0,u,0,0,0.1,0.1,0,0\n'
	printf '316224600000001,,1,0,,0,u,0,0,0.1,0.1,0,0\n'
	printf '1,,123456789012345678901,0,,0,u,0,0,0.1,0.1,0,0\n'
	printf '1,,1,0,,0,u,0,-1,0.1,0.1,0,0\n'
}
s_google2011_first_line_bad() { ctl $((GOOGLE | SKIP)); printf 'time,missing,job\n'; task_events; }
s_machine_size_out_of_range() { ctl $((AUTO | BADSIZE)); jsonl; }
s_guessed_format_bad_first_line() {
	ctl $((AUTO | SKIP))
	printf 'a,b,c,d,e,f,g,h,i\n'
	batch_task
}
s_unknown_format() { ctl $AUTO; printf 'what,is,this\n1,2,3\n'; }
s_format_mismatch() { ctl $OPENB; native_csv; }
s_raw_gzip() { ctl $AUTO; task_events | gzip -n; }
s_raw_gzip_corrupt() {
	ctl $AUTO
	jsonl | gzip -n >"$tmp"
	head -c 30 "$tmp"
	printf '\377\377\377\377'
	tail -c +35 "$tmp"
}
s_raw_gzip_trailing_garbage() { ctl $NATIVE; jsonl | gzip -n; printf 'garbage\n'; }
s_raw_gzip_overlong_line() {
	ctl $((NATIVE | SKIP))
	{
		printf 'id,arrival_ms,cpu_milli,memory_bytes\n'
		head -c 70000 /dev/zero | tr '\0' 'x'
		printf ',1,1,1\nok,1,1,1\n'
		head -c 70000 /dev/zero | tr '\0' 'y'
	} | gzip -n
}
# Found by the round trip: a 65000-byte id was read, and written as a JSON
# line longer than the reader takes (now: a text field is at most 4 KiB).
s_raw_gzip_long_id() {
	ctl $((AUTO | SKIP))
	{
		printf 'id,arrival_ms,cpu_milli,memory_bytes\n'
		head -c 65000 /dev/zero | tr '\0' 'x'
		printf ',1,1,1\n'
		head -c 4096 /dev/zero | tr '\0' 'y'
		printf ',1,1,1\n'
	} | gzip -n
}
# 'id' is "id" given twice to json-c, which kept the last without a word.
s_native_jsonl_single_quotes() {
	ctl $((NATIVE | SKIP))
	printf '{"id":"a",\047id\047:"b","arrival_ms":0,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{\047id\047:"a\047\"","arrival_ms":0,"cpu_milli":1,"memory_bytes":1}\n'
	printf '{"id":"c","arrival_ms":0,"cpu_milli":1,"memory_bytes":1} /* x */\n'
}
s_empty() { :; }
s_ctl_only() { ctl $((NODES | SKIP)); }
s_blank_lines() { ctl $AUTO; printf '\n\r\n \n\n'; }

for s in native_jsonl native_jsonl_auto_vm native_csv native_csv_bom_crlf native_csv_end_ms \
	native_end_and_duration native_csv_end_before_arrival native_csv_duration_and_end \
	native_gzip native_gzip_two_members native_gzip_cut native_jsonl_truncated \
	native_jsonl_truncated_skip native_jsonl_dup_keys native_jsonl_huge_numbers \
	native_jsonl_escapes native_bad_utf8 native_control_chars native_csv_bad_numbers \
	native_csv_huge_numbers native_csv_missing_columns native_csv_no_memory_column \
	native_csv_header_errors native_csv_broken_quotes native_csv_too_many_fields \
	openb_pod_list openb_pod_list_auto_small_machine openb_pod_list_bad openb_node_list \
	openb_node_list_bad openb_node_list_no_cpu openb_node_list_as_trace \
	alibaba2018_batch_task alibaba2018_batch_task_auto alibaba2018_batch_task_many \
	alibaba2018_batch_task_bad alibaba2018_container_meta alibaba2018_container_meta_small \
	google2011_task_events google2011_task_events_auto_large google2011_bad \
	google2011_first_line_bad machine_size_out_of_range guessed_format_bad_first_line \
	unknown_format format_mismatch raw_gzip raw_gzip_corrupt raw_gzip_trailing_garbage \
	raw_gzip_overlong_line raw_gzip_long_id native_jsonl_single_quotes empty ctl_only blank_lines; do
	seed "$(echo "$s" | tr _ -)" "s_$s"
done
echo "wrote $(find "$out" -type f | wc -l) seeds to $out"
