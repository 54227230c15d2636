//! Scenario files shipped inside the binary, so the app opens with no arguments and no files.

/// One embedded sample: menu title, file name, JSON text.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub title: &'static str,
    pub file: &'static str,
    pub json: &'static str,
}

/// Every sample in `samples/`; the first is the default scenario the app opens on.
pub const SAMPLES: &[Sample] = &[
    Sample {
        title: "Mpipe ⟨transpose, 1f1b⟩ (ViT + LLM)",
        file: "mpipe-vit-llm.json",
        json: include_str!("../../samples/mpipe-vit-llm.json"),
    },
    Sample {
        title: "Mpipe, frozen encoder",
        file: "mpipe-vit-llm-frozen.json",
        json: include_str!("../../samples/mpipe-vit-llm-frozen.json"),
    },
    Sample {
        title: "1F1B",
        file: "1f1b.json",
        json: include_str!("../../samples/1f1b.json"),
    },
    Sample {
        title: "GPipe",
        file: "gpipe.json",
        json: include_str!("../../samples/gpipe.json"),
    },
    Sample {
        title: "LLM over a 24 GB device: fit it by offload or recomputation",
        file: "llm-over-capacity.json",
        json: include_str!("../../samples/llm-over-capacity.json"),
    },
    Sample {
        title: "Interleaved VPP-3 ⟨1f1b, 1f1b, 1f1b⟩",
        file: "vpp3.json",
        json: include_str!("../../samples/vpp3.json"),
    },
    Sample {
        title: "MLLM-Understanding ⟨nested, 1f1b⟩ (BigMac)",
        file: "mllm-understanding.json",
        json: include_str!("../../samples/mllm-understanding.json"),
    },
    Sample {
        title: "MLLM-Generation ⟨nested, 1f1b, nested⟩ (BigMac)",
        file: "mllm-generation.json",
        json: include_str!("../../samples/mllm-generation.json"),
    },
    Sample {
        title: "Nemotron-H-like hybrid, 1F1B (OctoPipe)",
        file: "nemotron-h.json",
        json: include_str!("../../samples/nemotron-h.json"),
    },
    Sample {
        title: "Jamba-like hybrid, 1F1B (OctoPipe)",
        file: "jamba.json",
        json: include_str!("../../samples/jamba.json"),
    },
    Sample {
        title: "DualPipe ⟨dualpipe⟩: two directions, F&B overlapped (DeepSeek-V3)",
        file: "dualpipe.json",
        json: include_str!("../../samples/dualpipe.json"),
    },
    Sample {
        title: "Hanayo ⟨hanayo ×4⟩: two waves folded over the ranks",
        file: "hanayo.json",
        json: include_str!("../../samples/hanayo.json"),
    },
    Sample {
        title: "UMA-1.2B-like MLIP, second order ⟨wavek⟩ (JanusPipe)",
        file: "uma-1.2b.json",
        json: include_str!("../../samples/uma-1.2b.json"),
    },
    Sample {
        title: "DeepSeek-V3-like MoE, EP 64 ⟨dualpipev⟩ with F&B overlap",
        file: "moe-dualpipev.json",
        json: include_str!("../../samples/moe-dualpipev.json"),
    },
    Sample {
        title: "DeepSeek-V3-like MoE, EP 64 ⟨dualpipev⟩ without F&B overlap",
        file: "moe-dualpipev-no-overlap.json",
        json: include_str!("../../samples/moe-dualpipev-no-overlap.json"),
    },
    Sample {
        title: "DeepSeek-V3-like MoE, EP 64 ⟨1f1b⟩",
        file: "moe-1f1b.json",
        json: include_str!("../../samples/moe-1f1b.json"),
    },
    Sample {
        title: "DeepSeek-V3-like MoE, EP 64, interleaved ⟨1f1b, 1f1b⟩",
        file: "moe-interleaved.json",
        json: include_str!("../../samples/moe-interleaved.json"),
    },
    Sample {
        title: "Mpipe at 512 devices ⟨transpose, 1f1b⟩ (ViT + DeepSeek-V3-like)",
        file: "mpipe-large-scale.json",
        json: include_str!("../../samples/mpipe-large-scale.json"),
    },
    Sample {
        title: "512 devices, the encoder as its own stage (DistTrain-like baseline)",
        file: "mpipe-large-scale-baseline.json",
        json: include_str!("../../samples/mpipe-large-scale-baseline.json"),
    },
];
