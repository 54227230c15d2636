//! Importing a synthetic 200 MB Kineto-style trace (figures recorded in the README): the
//! importer's throughput next to serde_json parsing the same bytes into `IgnoredAny` (from a slice
//! and from a reader), and the importer's peak heap beyond the input bytes.

#![allow(clippy::expect_used)] // a benchmark input that does not import is a bug in the benchmark

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use peak_alloc::PeakAlloc;
use std::fmt::Write;
use std::hint::black_box;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

const TARGET_BYTES: usize = 200 * 1000 * 1000;

/// A Kineto-like trace: CPU ops with args, kernels on GPU streams, flows, pipelining annotations,
/// float µs timestamps relative to `baseTimeNanoseconds`.
fn synthetic_trace() -> Vec<u8> {
    let ops = [
        "aten::mm",
        "aten::addmm",
        "aten::relu",
        "aten::empty",
        "aten::copy_",
        "aten::add_",
        "aten::linear",
        "aten::t",
        "aten::transpose",
        "aten::as_strided",
        "cudaLaunchKernel",
        "aten::mse_loss",
        "autograd::engine::evaluate_function: AddmmBackward0",
    ];
    let mut out = String::with_capacity(TARGET_BYTES + 4096);
    out.push_str("{\"schemaVersion\":1,\"deviceProperties\":[],\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":0,\"world_size\":8},\"traceEvents\":[\n");
    out.push_str("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4242,\"tid\":0,\"args\":{\"name\":\"python3\"}}");
    let mut ts = 5_114_768_343_893.906_f64;
    let mut i: u64 = 0;
    while out.len() < TARGET_BYTES {
        let stage = i % 4;
        let mb = (i / 4) % 8;
        let _ = write!(
            out,
            ",\n{{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"PP:{stage}F{mb}\",\"pid\":4242,\"tid\":4242,\"ts\":{ts:.3},\"dur\":812.250,\"args\":{{\"External id\":{i},\"Record function id\":0,\"Ev Idx\":{i}}}}}"
        );
        for (k, op) in ops.iter().enumerate() {
            let t = ts + k as f64 * 3.5;
            let _ = write!(
                out,
                ",\n{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"{op}\",\"pid\":4242,\"tid\":4242,\"ts\":{t:.3},\"dur\":3.125,\"args\":{{\"External id\":{},\"Sequence number\":{},\"Fwd thread id\":0,\"Ev Idx\":{}}}}}",
                i * 16 + k as u64,
                i,
                i * 16 + k as u64
            );
            if k % 4 == 0 {
                let _ = write!(
                    out,
                    ",\n{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void gemm_kernel<float, 128, 64>(Params)\",\"pid\":0,\"tid\":7,\"ts\":{:.3},\"dur\":2.5,\"args\":{{\"stream\":7,\"device\":0,\"correlation\":{},\"grid\":[64,1,1],\"block\":[128,1,1]}}}}\
                     ,\n{{\"ph\":\"s\",\"id\":{},\"pid\":4242,\"tid\":4242,\"ts\":{t:.3},\"cat\":\"ac2g\",\"name\":\"ac2g\"}}\
                     ,\n{{\"ph\":\"f\",\"id\":{},\"pid\":0,\"tid\":7,\"ts\":{:.3},\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}}",
                    t + 10.0,
                    i * 16 + k as u64,
                    i * 16 + k as u64,
                    i * 16 + k as u64,
                    t + 10.0
                );
            }
        }
        ts += 900.0;
        i += 1;
    }
    out.push_str("\n],\"baseTimeNanoseconds\":1790857026000000000}\n");
    out.into_bytes()
}

fn import(c: &mut Criterion) {
    let bytes = synthetic_trace();
    let mb = bytes.len() as f64 / 1e6;

    PEAK.reset_peak_usage();
    let before = PEAK.current_usage();
    let trace = mpipe::trace::import_bytes(&bytes, "synthetic.json").expect("imports");
    let peak = PEAK.peak_usage().saturating_sub(before);
    let kept = PEAK.current_usage().saturating_sub(before);
    println!(
        "synthetic trace: {mb:.1} MB, {} events, {} spans; importer peak heap {:.1} MB ({:.2}× the file), kept {:.1} MB",
        trace.event_count,
        trace.spans.len(),
        peak as f64 / 1e6,
        peak as f64 / bytes.len() as f64,
        kept as f64 / 1e6
    );
    drop(trace);

    let mut group = c.benchmark_group("trace_import_200MB");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("serde_json IgnoredAny from_slice", |b| {
        b.iter(|| {
            serde_json::from_slice::<serde::de::IgnoredAny>(black_box(&bytes)).expect("parses")
        })
    });
    group.bench_function("serde_json IgnoredAny from_reader", |b| {
        b.iter(|| {
            serde_json::from_reader::<_, serde::de::IgnoredAny>(std::io::BufReader::new(black_box(
                bytes.as_slice(),
            )))
            .expect("parses")
        })
    });
    group.bench_function("mpipe import (streaming)", |b| {
        b.iter(|| mpipe::trace::import_bytes(black_box(&bytes), "synthetic.json").expect("imports"))
    });
    group.finish();
}

criterion_group!(benches, import);
criterion_main!(benches);
