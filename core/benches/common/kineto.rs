//! A Kineto-like trace file, `kineto_files.py`'s byte for byte (rank by rank): CPU ops with
//! args, kernels on a GPU stream with `ac2g` flows, `PP:` annotations, float µs timestamps relative to
//! `baseTimeNanoseconds`.

use std::fmt::Write;

/// About `target_bytes` of one rank's trace; the annotations name stage `rank`, or cycle through
/// four stages when `rank` is `None` (the `trace_import` benchmark's single file).
pub fn synthetic_trace(target_bytes: usize, rank: Option<u64>) -> Vec<u8> {
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
    let mut out = String::with_capacity(target_bytes + 4096);
    let _ = writeln!(
        out,
        "{{\"schemaVersion\":1,\"deviceProperties\":[],\"distributedInfo\":{{\"backend\":\"nccl\",\"rank\":{},\"world_size\":8}},\"traceEvents\":[",
        rank.unwrap_or(0)
    );
    out.push_str("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4242,\"tid\":0,\"args\":{\"name\":\"python3\"}}");
    let mut ts = 5_114_768_343_893.906_f64;
    let mut i: u64 = 0;
    while out.len() < target_bytes {
        let stage = rank.unwrap_or(i % 4);
        let mb = match rank {
            Some(_) => i % 8,
            None => (i / 4) % 8,
        };
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
