#!/usr/bin/python3
"""End-to-end tests of the configs stepsim reads from other tools (issue: "Speak the
ecosystem's language").

    test_import.py MODE STEPSIM SOURCE_ROOT

MODE: hf (Hugging Face config.json as the model), frameworks (stepsim import and
      parallel.from), html (stepsim report --html, rendered in headless Chromium)
Each expected number is derived in a comment next to it."""
import json
import os, re, shutil, subprocess, sys, tempfile

mode, stepsim, root = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
failures = checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def run(*args):
    p = subprocess.run([stepsim] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def hf():
    sc = os.path.join(root, "scenarios")
    hfdir = os.path.join(root, "workloads", "hf")
    # The public config.json of each hand-written workload (workloads/hf/NAME/config.json,
    # the published fields) gives the same model: the same parameters, FLOPs and memory plan,
    # so `mem` and `run` print the same JSON with either (64 H100s, tp 8 x pp 2 x dp 4; the
    # model's name appears in neither). Global batch 8: two micro-batches per pipeline, since
    # the MoE models generate every rank's ops (32 micro-batches of DeepSeek-V3 took 37 s).
    scen = os.path.join(sc, "llama3.1-70b-64xh100.yaml")
    for name in ("llama3.1-8b", "llama3.1-70b", "qwen3-4b", "qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3"):
        a = run("mem", scen, "--set", "model=" + name, "--set", "training.global_batch=8", "--json")
        b = run("mem", scen, "--set", "model=" + os.path.join(hfdir, name),
                "--set", "training.global_batch=8", "--json")
        check(a[0] == b[0] and a[1] == b[1] and a[1], "%s: config.json = workload (mem): %s" % (name, b[2]))
        check(b[2].count("note:") == 1 and "ignored (no effect on FLOPs or memory): architectures" in b[2],
              "%s: the ignored fields are listed once: %s" % (name, b[2]))
    # the FLOPs too: one step of Qwen3-4B on one H100 (tflops_per_gpu counts the model's
    # FLOPs), given as the directory or as the file
    one = os.path.join(sc, "qwen3-0.6b-h100.yaml")
    a = run("run", one, "--set", "model=qwen3-4b", "--json")
    b = run("run", one, "--set", "model=" + os.path.join(hfdir, "qwen3-4b", "config.json"), "--json")
    check(a[0] == 0 and a[1] == b[1], "qwen3-4b: config.json = workload (run)")
    # GPT-2 (openai-community/gpt2 config.json): per layer 12h^2 + 13h (QKV and output, MLP
    # 4h each way, all with biases; two LayerNorms of 2h) at h = 768: 7,087,872; 12 layers
    # 85,054,464; token embedding 50,257 x 768 = 38,597,376 (tied to the head); learned
    # positions 1,024 x 768 = 786,432; final LayerNorm 1,536: 124,439,808 parameters, 2 bytes
    # each in bf16.
    rc, out, err = run("mem", one, "--set", "model=" + os.path.join(hfdir, "gpt2"),
                       "--set", "training.seq_len=1024", "--json")
    o = json.loads(out) if rc == 0 else {}
    check(o.get("mem_bytes", {}).get("params") == 2 * 124439808, "gpt2 parameters: %s %s" % (out[:200], err))
    # ... whose q, k and v are one tensor (c_attn: model.qkv_fused): under DeepSpeed's list
    # collectives one layer gathers c_attn, c_proj and the two MLP matrices (its biases and
    # norms, at most 1e5 elements, stay whole), in the forward and again in the backward
    # (nothing kept for a later use: max_reuse_distance 0): 8 gathers; the embedding its
    # token and position tables: 4 (the head is tied to it)
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        tr = os.path.join(tmp, "t.h5")
        rc, out, err = run("trace", os.path.join(root, "test", "cli", "data", "ddp.yaml"), "-o", tr,
                           "--set", "model=" + os.path.join(hfdir, "gpt2"), "--set", "model.layers=1",
                           "--set", "training.seq_len=128", "--set", "parallel.zero=3",
                           "--set", "parallel.fsdp={implementation: deepspeed, list_collectives: "
                           "true, max_reuse_distance: 0}")
        if rc == 0:
            with h5py.File(tr, "r") as f:
                ops = f["ops"][:]
            ops = ops[(ops["rank"] == 0) & (ops["name"] == b"fsdp.gather")]
            layers = sorted(int(x) for x in ops["layer"])
        check(rc == 0 and layers == [-1] * 4 + [0] * 8, "gpt2 list gathers: %s %s" % (err, rc == 0 and layers))
    rc, out, err = run("check", one, "--set", "model=deepseek-v3", "--set", "model.qkv_fused=true")
    check(rc == 2 and "model.qkv_fused: fused q/k/v matrices do not apply to MLA" in err, "qkv_fused with MLA: " + err)
    # Qwen2.5-7B (Qwen/Qwen2.5-7B config.json): biases on q, k and v alone (qkv_bias), per
    # layer 2h^2 (q, o) + 2 x h x 512 (k, v: 4 heads of 128) + 4,608 biases + 3 h x 18,944
    # (SwiGLU) + 2h (norms) at h = 3,584: 233,057,792; 28 layers 6,525,618,176; untied
    # embedding and head 2 x 152,064 x 3,584 = 1,089,994,752; final norm 3,584:
    # 7,615,616,512 parameters (the model card's 7.61B, 6.53B without embeddings)
    rc, out, err = run("mem", one, "--set", "model=" + os.path.join(hfdir, "qwen2.5-7b"), "--json")
    o = json.loads(out) if out else {}
    check(o.get("mem_bytes", {}).get("params") == 2 * 7615616512, "qwen2.5-7b parameters: %s" % out[:200])
    # BLOOM-560m (bigscience/bloom-560m's config as BloomConfig prints it): per layer 12h^2 +
    # 13h at h = 1,024: 12,596,224; 24 layers 302,309,376; token embedding 250,880 x 1,024 =
    # 256,901,120 (tied to the head) and its LayerNorm (word_embeddings_layernorm,
    # model.embed_norm) 2,048; ALiBi, no position table; final LayerNorm 2,048: 559,214,592
    # parameters (the model card's 559M), 2 bytes each in bf16
    rc, out, err = run("mem", one, "--set", "model=" + os.path.join(hfdir, "bloom-560m"), "--json")
    o = json.loads(out) if out else {}
    check(o.get("mem_bytes", {}).get("params") == 2 * 559214592, "bloom-560m parameters: %s %s"
          % (out[:200], err))
    # refused at the field: the residual after the norm (n_inner, which BloomModel does not
    # read, is listed as ignored)
    with tempfile.TemporaryDirectory() as tmp:
        for extra, want in (({"apply_residual_connection_post_layernorm": True},
                             "apply_residual_connection_post_layernorm: true"),):
            cfg = dict(json.load(open(os.path.join(hfdir, "bloom-560m", "config.json"))), **extra)
            path = os.path.join(tmp, "config.json")
            with open(path, "w") as f:
                json.dump(cfg, f, indent=1)
            rc, out, err = run("check", one, "--set", "model=" + path)
            check(rc == 2 and want in err and ": error:" in err, "bloom %s refused: %s" % (extra, err))
    rc, out, err = run("check", one, "--set", "model=deepseek-v3", "--set", "model.qkv_bias=true")
    check(rc == 2 and "model.qkv_bias: q/k/v biases do not apply to MLA" in err, "qkv_bias with MLA: " + err)
    # refused, one error line at the field in config.json, with a hint
    base = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 1024, "vocab_size": 1000,
            "hidden_act": "silu"}
    cases = (({"model_type": "falcon"}, "model_type: 'falcon' is not an architecture stepsim models yet"),
             ({"hidden_act": "gelu"}, "hidden_act: 'gelu' in a gated MLP is not supported yet"),
             ({"sliding_window": 4096}, "sliding_window: sliding-window attention is not modelled yet"),
             ({"attention_bias": True}, "attention_bias: biases on attention alone are not supported yet"),
             ({"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2,
               "moe_intermediate_size": 256, "decoder_sparse_step": 2}, "decoder_sparse_step: MoE on every 2-th"),
             ({"model_type": "gpt2", "n_embd": 256, "n_layer": 2, "n_head": 4, "attn_pdrop": 0.1,
               "resid_pdrop": 0.2}, "differs from the other dropout rates"),
             ({"hidden_size": "big"}, "model.hidden: expected an integer"),
             ({"attention_bias": "true"}, 'attention_bias: expected true or false, got the string "true"'),
             ({"tie_word_embeddings": 1}, "tie_word_embeddings: expected true or false, got 1"),
             ({"model_type": "mixtral", "num_local_experts": 8},
              "num_experts_per_tok: missing, and this architecture's model.moe.top_k"),
             ({"model_type": "gpt2", "n_embd": 10**19, "n_layer": 2, "n_head": 4},
              "model.hidden: '10000000000000000000' is out of range"))
    with tempfile.TemporaryDirectory() as tmp:
        for change, msg in cases:
            cfg = dict(base, **change)
            path = os.path.join(tmp, "config.json")
            with open(path, "w") as f:
                json.dump(cfg, f, indent=2)
            rc, out, err = run("check", one, "--set", "model=" + path)
            lines = err.strip().splitlines()
            check(rc == 2 and lines and lines[0].startswith(path + ":") and " error: " in lines[0] and
                  msg in lines[0] and len(lines) >= 2 and out == "", "%s: %s" % (change, err))
        # a directory without config.json, and a JSON file that is not an object
        rc, out, err = run("check", one, "--set", "model=" + tmp + "/")
        check(rc == 2 and "config.json" in err, "directory: " + err)
        with open(os.path.join(tmp, "list.json"), "w") as f:
            f.write("[1, 2]\n")
        rc, out, err = run("check", one, "--set", "model=" + os.path.join(tmp, "list.json"))
        check(rc == 2 and "must be" in err, "not an object: " + err)


def frameworks():
    fw = os.path.join(root, "test", "cli", "data", "frameworks")
    topo = os.path.join(root, "topologies")
    # Each framework config imports to a scenario that runs, and that scenario gives the JSON
    # of a scenario naming the framework file in parallel.from (the same keys either way;
    # dp comes from the topology's GPUs in the import and is written in the other).
    #   deepspeed  ZeRO-3 with CPU offload of parameters and optimizer, micro-batch 1 x 4
    #              accumulated: Llama 3.1 70B on one DGX A100 (dp 8, 32 sequences a step)
    #   accelerate FSDP FULL_SHARD, bf16, activation checkpointing, 8 processes: Llama 3.1 8B
    #              on one DGX H100
    #   torchtitan Llama 3 8B's own config (model from name and flavor), shard degree -1:
    #              all 32 GPUs of dgx-h100.yaml's 4 nodes
    #   megatron   GPT-3 175B's launch line (tp 8 x pp 16, 1,536 sequences), on 16 DGX
    #              A100-like nodes: dp 1
    cases = (("deepspeed", "ds_zero3_offload.json", os.path.join(topo, "dgx-a100.yaml"), "llama3.1-70b", 8,
              ["training.seq_len=4096", "training.recompute=full"]),
             ("accelerate", "accelerate_fsdp.yaml", os.path.join(topo, "dgx-h100.yaml"), "llama3.1-8b", None,
              ["training.seq_len=4096"]),
             ("torchtitan", "torchtitan_llama3_8b.toml", os.path.join(topo, "dgx-h100.yaml"), None, 32, []),
             ("megatron", "megatron_gpt3_175b.txt", os.path.join(fw, "a100-x16.yaml"), None, 1,
              ["training.global_batch=64"]))
    with tempfile.TemporaryDirectory() as tmp:
        for name, src, topology, model, dp, extra in cases:
            out = os.path.join(tmp, name + ".yaml")
            args = ["import", name, os.path.join(fw, src), "--topology", topology, "-o", out, "--name", name]
            if model:
                args += ["--model", model]
            rc, o, err = run(*args)
            check(rc == 0 and os.path.exists(out), "%s imports: %s" % (name, err))
            if rc != 0:
                continue
            text = open(out).read()
            check("# Not imported (no stepsim equivalent):" in text and "parallel: {from: {%s:" % name in text,
                  "%s: the header lists what was not imported" % name)
            # torchtitan reduces gradients in fp32 unless mixed_precision_reduce says otherwise
            # (its default float32; the config sets none)
            if name == "torchtitan":
                check(re.search(r"^  grad_dtype: fp32 +# training.mixed_precision_reduce absent", text, re.M)
                      is not None, "torchtitan: grad_dtype fp32 by default")
            if name == "deepspeed":  # DeepSpeed's release rule, from stage3_max_reuse_distance;
                # the step's sub-groups from sub_group_size (the config's 1e9)
                check("max_reuse_distance: 1000000000" in text and
                      "stage3_max_reuse_distance (" not in text, "deepspeed: max_reuse_distance imported")
                check("sub_group_size: 1000000000" in text and "sub_group_size (" not in text,
                      "deepspeed: sub_group_size imported")
            # Accelerate's FSDP checkpointing and torchtitan's are FSDP's non-reentrant
            # checkpoint_wrapper, which stops re-running a block early; DeepSpeed's and
            # Megatron's own checkpointing re-run it whole
            early = re.search(r"^  recompute_early_stop: true", text, re.M) is not None
            check(early == (name in ("accelerate", "torchtitan")),
                  "%s: recompute_early_stop %s" % (name, early))
            # the same keys by reference: a scenario naming the file
            ref = os.path.join(tmp, name + "-from.yaml")
            with open(ref, "w") as f:
                f.write("name: %s\ntopology: %s\n" % (name, topology))
                if model:
                    f.write("model: %s\n" % model)
                f.write("parallel:\n")
                if dp is not None:
                    f.write("  dp: %d\n" % dp)
                f.write("  from: {%s: %s}\n" % (name, os.path.join(fw, src)))
            sets = [x for e in extra if not e.startswith("training.global_batch") for x in ("--set", e)]
            a = run("mem", out, *sets, "--json")
            b = run("mem", ref, *sets, "--json")
            check(a[0] == 0 and a[1] == b[1], "%s: import = parallel.from: %s | %s" % (name, a[2], b[2]))
            # and it runs (GPT-3 with 64 of its 1,536 sequences, to keep the test short)
            sets = [x for e in extra for x in ("--set", e)]
            rc, o, err = run("run", out, *sets, "--steps", "1", "--json")
            check(rc == 0 and json.loads(o).get("status") in ("ok", "oom"), "%s runs: %s" % (name, err[-300:]))
    # Accelerate's dynamo_config.dynamo_backend: INDUCTOR compiles the model (and the Hugging
    # Face model's loss in its forward); NO, EAGER, AOT_EAGER, CUDAGRAPHS run PyTorch's own
    # kernels; without dynamo_config the config says nothing (the scenario's values); an
    # inference backend is refused at its key
    src = open(os.path.join(fw, "accelerate_fsdp.yaml")).read()
    with tempfile.TemporaryDirectory() as tmp:
        for k, (extra, model_on, loss) in enumerate((
                ("", None, None),
                ("dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_mode: default\n", "true",
                 "compiled"),
                ("dynamo_config:\n  dynamo_backend: 'NO'\n", "false", "pytorch"),
                ("dynamo_config:\n  dynamo_backend: EAGER\n", "false", "pytorch"),
                ("dynamo_config:\n  dynamo_backend: CUDAGRAPHS\n", "false", "pytorch"))):
            cfg, out = os.path.join(tmp, "a%d.yaml" % k), os.path.join(tmp, "a%d-out.yaml" % k)
            open(cfg, "w").write(src + extra)
            rc, o, err = run("import", "accelerate", cfg, "--topology",
                             os.path.join(topo, "dgx-h100.yaml"), "--model", "llama3.1-8b", "-o", out)
            got = open(out).read() if rc == 0 else ""
            ce = re.search(r"^  cross_entropy: (\w+)", got, re.M)
            cm = re.search(r"^  compile: (\w+)", got, re.M)
            check(rc == 0 and (cm and cm.group(1)) == model_on and (ce and ce.group(1)) == loss and
                  ("dynamo_mode" not in extra or "dynamo_config.dynamo_mode" in got),
                  "accelerate dynamo %d: compile %s loss %s (want %s %s) %s" % (
                      k, cm and cm.group(1), ce and ce.group(1), model_on, loss, err))
        cfg, out = os.path.join(tmp, "trt.yaml"), os.path.join(tmp, "trt-out.yaml")
        open(cfg, "w").write(src + "dynamo_config:\n  dynamo_backend: TENSORRT\n")
        rc, o, err = run("import", "accelerate", cfg, "--topology",
                         os.path.join(topo, "dgx-h100.yaml"), "--model", "llama3.1-8b", "-o", out)
        check(rc == 2 and "dynamo_config.dynamo_backend" in err and not os.path.exists(out),
              "accelerate TENSORRT refused: " + err)
        # a scenario that sets compile itself and takes the rest from a config without dynamo
        ref = os.path.join(tmp, "ref.yaml")
        open(ref, "w").write("name: ref\ntopology: %s\nmodel: llama3.1-8b\ntraining: {seq_len: 4096, "
                             "compile: false}\nparallel:\n  from: {accelerate: %s}\n" % (
                                 os.path.join(topo, "dgx-h100.yaml"),
                                 os.path.join(fw, "accelerate_fsdp.yaml")))
        rc, o, err = run("check", ref)
        check(rc == 0, "accelerate without dynamo_config leaves the scenario's compile: " + err)
    # torchtitan's loss is PyTorch's cross entropy. torch.compile covers the blocks
    # ("model") and the loss as compile.components lists them (both by default) when
    # compile.enable is on; the older training.compile covers both (the loss since April
    # 2025). Cases: the shipped config (compile off), on, on with the model only, on with the
    # loss only, no [compile] section, training.compile on; and components not a list.
    src = open(os.path.join(fw, "torchtitan_llama3_8b.toml")).read()
    sect = '[compile]\nenable = false\ncomponents = ["model", "loss"]'
    assert sect in src
    with tempfile.TemporaryDirectory() as tmp:
        for k, (new, model_on, loss) in enumerate((
                (sect, "false", "pytorch"),
                ('[compile]\nenable = true\ncomponents = ["model", "loss"]', "true", "compiled"),
                ('[compile]\nenable = true\ncomponents = ["model"]', "true", "pytorch"),
                ('[compile]\nenable = true\ncomponents = ["loss"]', "false", "compiled"),
                ("", None, "pytorch"),
                ("", "true", "compiled"))):
            text = src.replace(sect, new)
            if k == 5:
                text = text.replace("local_batch_size = 1", "local_batch_size = 1\ncompile = true")
            cfg, out = os.path.join(tmp, "t%d.toml" % k), os.path.join(tmp, "t%d.yaml" % k)
            open(cfg, "w").write(text)
            rc, o, err = run("import", "torchtitan", cfg, "--topology", os.path.join(topo, "dgx-h100.yaml"),
                             "-o", out)
            got = open(out).read() if rc == 0 else ""
            ce = re.search(r"cross_entropy: (\w+)", got)
            cm = re.search(r"^  compile: (\w+)", got, re.M)
            check(ce and ce.group(1) == loss and (cm.group(1) if cm else None) == model_on,
                  "torchtitan compile %d: compile %s loss %s (want %s %s) %s" % (
                      k, cm and cm.group(1), ce and ce.group(1), model_on, loss, err))
        cfg = os.path.join(tmp, "bad.toml")
        open(cfg, "w").write(src.replace(sect, '[compile]\nenable = true\ncomponents = "loss"'))
        rc, o, err = run("import", "torchtitan", cfg, "--topology", os.path.join(topo, "dgx-h100.yaml"),
                         "-o", os.path.join(tmp, "bad.yaml"))
        check(rc == 2 and "compile.components" in err and ":" in err.split("error")[0] and
              not os.path.exists(os.path.join(tmp, "bad.yaml")), "components not a list: %s" % err)
        # its TP is DTensor's: SP on the [b, s, h] layout, the input-gradient reduce-scatter
        # after both GEMMs
        cfg, out = os.path.join(tmp, "tp.toml"), os.path.join(tmp, "tp.yaml")
        open(cfg, "w").write(src.replace("tensor_parallel_degree = 1", "tensor_parallel_degree = 8"))
        rc, o, err = run("import", "torchtitan", cfg, "--topology", os.path.join(topo, "dgx-h100.yaml"),
                         "-o", out)
        text = open(out).read() if rc == 0 else ""
        check(rc == 0 and all(re.search(r"^  %s: %s\b" % kv, text, re.M) for kv in (
            ("tp", "8"), ("sp", "true"), ("sp_implementation", "dtensor"), ("tp_grad_overlap", "false"))),
              "torchtitan TP: %s %s" % (err, re.findall(r"^  (?:tp|sp)\w*: .*$", text, re.M)))
        # torchtitan's activation checkpointing: full and per-layer ("2": every second block)
        # checkpoint whole blocks with FSDP's non-reentrant checkpoint_wrapper, which stops
        # re-running a block once its last saved tensor is rebuilt (recompute_early_stop);
        # the key is set whatever the mode (plan's and the remedies' full-recompute runs
        # follow it; the per-op policy stops early anyway)
        ac = '[activation_checkpoint]\nmode = "selective"  # ["none", "selective", "full"]\nselective_ac_option = "op"'
        assert ac.split("  #")[0] in src
        # Since pytorch/torchtitan#1580 activation_checkpoint.early_stop passes the choice
        # (false: the whole block re-runs), except under a compiled model, which recomputes
        # only what the backward reads
        sect = '[compile]\nenable = false\ncomponents = ["model", "loss"]'
        for k, (mode, opt, es, compiled, rc_want, early_want) in enumerate((
                ("full", "op", None, False, "full", True), ("selective", "2", None, False, "full", True),
                ("selective", "op", None, False, "op", True), ("none", "op", None, False, "none", True),
                ("full", "op", "false", False, "full", False), ("full", "op", "true", False, "full", True),
                ("full", "op", "false", True, "full", True), ("selective", "op", "false", False, "op", False))):
            cfg, out = os.path.join(tmp, "ac.toml"), os.path.join(tmp, "ac-%d.yaml" % k)
            text = re.sub(r'\[activation_checkpoint\]\nmode = "[a-z]+"[^\n]*\nselective_ac_option = "[a-z0-9]+"',
                          '[activation_checkpoint]\nmode = "%s"\nselective_ac_option = "%s"%s' % (
                              mode, opt, "\nearly_stop = %s" % es if es else ""), src)
            if compiled:
                text = text.replace(sect, sect.replace("false", "true"))
            open(cfg, "w").write(text)
            rc, o, err = run("import", "torchtitan", cfg, "--topology", os.path.join(topo, "dgx-h100.yaml"),
                             "-o", out)
            got = open(out).read() if rc == 0 else ""
            r = re.search(r"^  recompute: (\w+)", got, re.M)
            early = re.search(r"^  recompute_early_stop: true", got, re.M) is not None
            unmapped = re.search(r"^#.*activation_checkpoint\.early_stop", got, re.M) is not None
            check(rc == 0 and (r and r.group(1)) == rc_want and early == early_want and not unmapped,
                  "torchtitan AC %d %s %s early_stop %s: recompute %s early stop %s listed %s %s" % (
                      k, mode, opt, es, r and r.group(1), early, unmapped, err))
        # torchtitan's 2024 norm_type: "fused_rmsnorm" (its Triton kernel) is norm_kernel:
        # fused; "rmsnorm" leaves the default (composite without compile)
        # (a basic string's escapes decoded: fused\u005frmsnorm is fused_rmsnorm)
        for nt, want in (("fused_rmsnorm", "fused"), ("compiled_rmsnorm", "fused"),
                         ("fused\\u005frmsnorm", "fused"),
                         ("rmsnorm", None), ("layernorm", 2), ("bogus", 2)):
            cfg, out = os.path.join(tmp, "nt.toml"), os.path.join(tmp, "nt-%s.yaml" % nt)
            open(cfg, "w").write(src.replace('[model]\n', '[model]\nnorm_type = "%s"\n' % nt))
            rc, o, err = run("import", "torchtitan", cfg, "--topology",
                             os.path.join(topo, "dgx-h100.yaml"), "-o", out)
            if want == 2:  # refused at the field, nothing written
                check(rc == 2 and "model.norm_type" in err and not os.path.exists(out),
                      "torchtitan norm_type %s refused: %s" % (nt, err))
                continue
            nk = re.search(r"^  norm_kernel: (\w+)", open(out).read() if rc == 0 else "", re.M)
            check(rc == 0 and (nk.group(1) if nk else None) == want,
                  "torchtitan norm_type %s: %s %s" % (nt, nk and nk.group(1), err))
        # TOML multi-line strings: a literal one and a basic one whose line-ending backslash
        # drops the newline and the indent after it read as the one-line "llama3" and "8B"
        # (the same model), after a description over three lines with escaped quotes
        q3, l3 = '"' * 3, "'" * 3
        ml = src.replace('name = "llama3"\nflavor = "8B"',
                         "name = %sllama3%s\nflavor = %s\n8\\\n    B%s" % (l3, l3, q3, q3)).replace(
            'description = "Llama 3 8B training"',
            'description = %sa \\"quoted\\"\nnote\n%s' % (q3, q3))
        assert ml.count(l3) == 2 and ml.count(q3) == 4
        cfg, out, ref = (os.path.join(tmp, n) for n in ("ml.toml", "ml.yaml", "ref.yaml"))
        open(cfg, "w").write(ml)
        rc, o, err = run("import", "torchtitan", cfg, "--topology", os.path.join(topo, "dgx-h100.yaml"),
                         "-o", out)
        rc2, o2, err2 = run("import", "torchtitan", os.path.join(fw, "torchtitan_llama3_8b.toml"),
                            "--topology", os.path.join(topo, "dgx-h100.yaml"), "-o", ref)
        model = lambda p: re.findall(r"^model: .*$", open(p).read(), re.M) if os.path.exists(p) else []
        check(rc == 0 and rc2 == 0 and model(out) == model(ref) != [],
              "torchtitan multi-line strings: %s %s %s" % (err, model(out), model(ref)))
        # float8 (torchao's tensorwise recipe, its default): fp8 with current scaling; the
        # row-wise recipes are refused at their key
        f8 = src.replace('[model]\n', '[model]\nconverters = ["float8"]\n')
        assert f8 != src
        cfg, out = os.path.join(tmp, "f8.toml"), os.path.join(tmp, "f8.yaml")
        open(cfg, "w").write(f8)
        rc, o, err = run("import", "torchtitan", cfg, "--topology", os.path.join(topo, "dgx-h100.yaml"),
                         "-o", out)
        text = open(out).read() if rc == 0 else ""
        check(rc == 0 and re.search(r"^  precision: fp8\b", text, re.M) and
              re.search(r"^  fp8_recipe: current\b", text, re.M), "torchtitan float8: " + err)
        cfg, out = os.path.join(tmp, "f8r.toml"), os.path.join(tmp, "f8r.yaml")
        open(cfg, "w").write(f8 + '\n[float8]\nrecipe_name = "rowwise"\n')
        rc, o, err = run("import", "torchtitan", cfg, "--topology", os.path.join(topo, "dgx-h100.yaml"),
                         "-o", out)
        check(rc == 2 and "float8.recipe_name" in err and not os.path.exists(out),
              "torchtitan float8 rowwise refused: " + err)
    # the Megatron line describes GPT-3 175B itself: the imported model is the workload's
    # (workloads/gpt3-175b.yaml: the same sizes, GeLU, LayerNorm, learned positions, biases,
    # tied embeddings, dropout 0.1, GPT-2's 50,257 tokens)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "g.yaml")
        run("import", "megatron", os.path.join(fw, "megatron_gpt3_175b.txt"), "--topology",
            os.path.join(fw, "a100-x16.yaml"), "-o", out)
        a = run("mem", out, "--json")
        b = run("mem", out, "--set", "model=gpt3-175b", "--json")
        check(a[0] == 0 and a[1] == b[1], "megatron model = gpt3-175b: %s" % a[2])
        # the arguments inline, after `--`
        line = open(os.path.join(fw, "megatron_gpt3_175b.txt")).read().strip()
        out2 = os.path.join(tmp, "g2.yaml")
        rc, o, err = run("import", "megatron", "--topology", os.path.join(fw, "a100-x16.yaml"), "-o", out2,
                         "--", line)
        check(rc == 0 and run("mem", out2, "--json")[1] == a[1], "inline arguments: " + err)
        # the same over several lines (a launch script's backslash continuations) and a name
        # that would break YAML if written as it is: the scenario still loads, to the same
        # memory plan, with the name intact (each argument line a comment of its own)
        out3 = os.path.join(tmp, "g3.yaml")
        odd = 'run: "a"\nmodel: gpt2'
        rc, o, err = run("import", "megatron", "--topology", os.path.join(fw, "a100-x16.yaml"), "-o", out3,
                         "--name", odd, "--", line.replace(" --", " \\\n  --", 3))
        m = run("mem", out3, "--json")
        check(rc == 0 and m[0] == 0 and json.loads(m[1])["name"] == odd and
              json.loads(m[1])["mem_bytes"] == json.loads(a[1])["mem_bytes"], "multi-line: %s %s" % (err, m[2]))
        # names YAML would read as another type or break a line with (null, a number, the
        # line separator U+2028, a non-ASCII letter) read back as given
        for k, odd in enumerate(("null", "True", "123", "a\u2028b: [1", "caf\u00e9")):
            out4 = os.path.join(tmp, "n%d.yaml" % k)
            rc, o, err = run("import", "megatron", "--topology", os.path.join(fw, "a100-x16.yaml"), "-o", out4,
                             "--name", odd, "--", line)
            m = run("mem", out4, "--json")
            check(rc == 0 and m[0] == 0 and json.loads(m[1])["name"] == odd, "name %r: %s %s" % (odd, err, m[2]))
        # the gradients' dtype: Megatron accumulates and reduces in fp32 with --bf16 unless
        # --grad-reduce-in-bf16, in fp16 with --fp16 unless --accumulate-allreduce-grads-in-fp32
        base = re.sub(r"\s--(bf16|fp16)\b", "", line)
        for extra, want in (("--bf16", "fp32"), ("--bf16 --grad-reduce-in-bf16", "bf16"),
                            ("--fp16", None), ("--fp16 --accumulate-allreduce-grads-in-fp32", "fp32")):
            outg = os.path.join(tmp, "gd.yaml")
            if os.path.exists(outg):
                os.remove(outg)
            rc, o, err = run("import", "megatron", "--topology", os.path.join(fw, "a100-x16.yaml"), "-o", outg,
                             "--", base + " " + extra)
            text = open(outg).read() if rc == 0 else ""
            got = re.search(r"^  grad_dtype: (\w+)", text, re.M)
            check(rc == 0 and (got.group(1) if got else None) == want, "megatron %s: grad_dtype %s, want %s %s" %
                  (extra, got.group(1) if got else None, want, err))
        # fp8: --fp8-format makes the run fp8, --fp8-recipe tensorwise is TE's current scaling
        # (delayed is Megatron's default); block-scaled recipes are refused at the argument
        out5 = os.path.join(tmp, "f8.yaml")
        rc, o, err = run("import", "megatron", "--topology", os.path.join(topo, "dgx-h100.yaml"), "-o", out5,
                         "--", line + " --fp8-format hybrid --fp8-recipe tensorwise")
        text = open(out5).read() if rc == 0 else ""
        check(rc == 0 and re.search(r"^  precision: fp8\b", text, re.M) and
              re.search(r"^  fp8_recipe: current\b", text, re.M), "megatron fp8 tensorwise: " + err)
        rc, o, err = run("import", "megatron", "--topology", os.path.join(topo, "dgx-h100.yaml"), "-o",
                         os.path.join(tmp, "f8mx.yaml"), "--", line + " --fp8-format hybrid --fp8-recipe mxfp8")
        check(rc == 2 and "--fp8-recipe" in err and "mxfp8" in err and
              not os.path.exists(os.path.join(tmp, "f8mx.yaml")), "mxfp8 refused: " + err)
        # BLOOM's Megatron-DeepSpeed line: --position-embedding-type alibi is ALiBi (no
        # position table: --max-position-embeddings not read), rotary is RoPE, the old
        # --checkpoint-activations is full recompute, --embed-layernorm the embedding's norm;
        # a type stepsim has no model of is refused at its value (column
        # len("--position-embedding-type ") + 1 = 27)
        for ptype, pos in (("alibi", "alibi"), ("rotary", "rope"), ("absolute", "learned")):
            out6 = os.path.join(tmp, "pos-%s.yaml" % ptype)
            rc, o, err = run("import", "megatron", "--topology", os.path.join(fw, "a100-x16.yaml"),
                             "-o", out6, "--", line + " --position-embedding-type %s --checkpoint-activations"
                             " --embed-layernorm" % ptype)
            text = open(out6).read() if rc == 0 else ""
            check(rc == 0 and re.search(r"^  position: %s\b" % pos, text, re.M) and
                  re.search(r"^  embed_norm: true\b", text, re.M) and
                  re.search(r"^  recompute: full\b", text, re.M) and
                  (re.search(r"^  max_seq_len:", text, re.M) is not None) == (pos == "learned"),
                  "megatron --position-embedding-type %s: %s\n%s" % (ptype, err, text))
        with open(os.path.join(tmp, "rel.txt"), "w") as f:
            f.write("--position-embedding-type relative\n")
        rc, o, err = run("import", "megatron", os.path.join(tmp, "rel.txt"), "--topology",
                         os.path.join(fw, "a100-x16.yaml"), "--model", "gpt3-175b", "-o",
                         os.path.join(tmp, "rel.yaml"))
        check(rc == 2 and ":1:27: error:" in err and "'relative'" in err and
              not os.path.exists(os.path.join(tmp, "rel.yaml")), "relative positions refused: " + err)
        # refused: an existing output, an unknown framework, a scenario key given twice, a
        # value stepsim cannot represent (one error line, exit 2)
        rc, o, err = run("import", "megatron", os.path.join(fw, "megatron_gpt3_175b.txt"), "-o", out)
        check(rc == 2 and "exists" in err, "no overwrite: " + err)
        rc, o, err = run("import", "colossalai", os.path.join(fw, "ds_zero3_offload.json"), "-o",
                         os.path.join(tmp, "x.yaml"))
        check(rc == 2 and "not a framework stepsim reads" in err, "unknown framework: " + err)
        ref = os.path.join(tmp, "twice.yaml")
        with open(ref, "w") as f:
            f.write("topology: %s\nmodel: llama3.1-70b\nparallel:\n  dp: 8\n  zero: 2\n"
                    "  from: {deepspeed: %s}\n" % (os.path.join(topo, "dgx-a100.yaml"),
                                                   os.path.join(fw, "ds_zero3_offload.json")))
        rc, o, err = run("check", ref)
        check(rc == 2 and "parallel.zero: given here and by" in err and err.startswith(ref + ":5:"),
              "given twice: " + err)
        # Megatron's arguments from a file beside the scenario (a relative path), under the
        # scenario's own model: the arguments' model keys give way to it, so the plan equals
        # `import megatron --model gpt3-175b`'s; the file is among the recorded inputs
        shutil.copy(os.path.join(fw, "megatron_gpt3_175b.txt"), os.path.join(tmp, "args.txt"))
        beside = os.path.join(tmp, "beside.yaml")
        with open(beside, "w") as f:
            f.write("topology: %s\nmodel: gpt3-175b\nparallel:\n  from: {megatron: args.txt}\n"
                    % os.path.join(fw, "a100-x16.yaml"))
        viaimport = os.path.join(tmp, "viaimport.yaml")
        run("import", "megatron", os.path.join(fw, "megatron_gpt3_175b.txt"), "--topology",
            os.path.join(fw, "a100-x16.yaml"), "--model", "gpt3-175b", "-o", viaimport)
        m1, m2 = run("mem", beside, "--json"), run("mem", viaimport, "--json")
        check(m1[0] == 0 and json.loads(m1[1])["mem_bytes"] == json.loads(m2[1])["mem_bytes"],
              "megatron file beside the scenario: " + m1[2])
        # a from file that is not there: the error at the scenario's value, exit 2 (line 4;
        # column 2 spaces + len("from: {megatron: ") = 17, + 1 = 20)
        with open(beside, "w") as f:
            f.write("topology: %s\nmodel: gpt3-175b\nparallel:\n  from: {megatron: gone.txt}\n"
                    % os.path.join(fw, "a100-x16.yaml"))
        rc, o, err = run("check", beside)
        check(rc == 2 and err.startswith(beside + ":4:20: error: parallel.from:") and
              "gone.txt" in err, "missing from file: " + err)
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{\n  "zero_optimization": {"stage": 3, "offload_param": {"device": "disk"}}\n}\n')
        rc, o, err = run("import", "deepspeed", bad, "-o", os.path.join(tmp, "y.yaml"))
        check(rc == 2 and err.startswith(bad + ":2:") and "device 'disk'" in err and
              not os.path.exists(os.path.join(tmp, "y.yaml")), "bad device: " + err)
        # more refusals, each at its field: both 16-bit formats on; zero accumulation steps; a
        # launch line over several lines whose dropout is not a rate (the error names the value:
        # line 2, column 2 spaces + 16 of "--hidden-dropout" + 1 space + 1 = 20); virtual stages
        # without the layer count they divide (at the value: column 39 + 2 = 41); an integer
        # past 1e15; a TOML table header broken over lines
        cases = [
            ("ds2.json", "deepspeed", '{"bf16": {"enabled": true},\n "fp16": {"enabled": true}}\n',
             ":1:", "both enabled"),
            ("ds3.json", "deepspeed", '{\n "gradient_accumulation_steps": 0}\n', ":2:", "at least 1"),
            ("m1.txt", "megatron", "--tensor-model-parallel-size 2 \\\n  --hidden-dropout x\n",
             ":2:20:", "not a rate"),
            ("m2.txt", "megatron", "--num-layers-per-virtual-pipeline-stage 2\n", ":1:41:",
             "needs --num-layers"),
            ("ds4.json", "deepspeed", '{"train_micro_batch_size_per_gpu": 1e16}\n', ":1:",
             "below 1e15"),
            ("t1.toml", "torchtitan", "[parallelism\n]\ndata_parallel_shard_degree = 2\n", ":1:",
             "unclosed table header"),
            # a NUL byte would end the parser's C string (the rest unread): refused at its line
            ("nul.toml", "torchtitan", '[model]\nname = "llama3"\n\0\nnorm_type = "layernorm"\n',
             ":3:1:", "a NUL byte"),
            # a value quoted in the error keeps it on one line (its newline escaped)
            ("nl.yaml", "accelerate", 'distributed_type: FSDP\ndynamo_config:\n  dynamo_backend: '
             '"INDUCTOR\\nX"\n', ":3:", "'INDUCTOR\\nX'"),
            ("dc.yaml", "accelerate", "distributed_type: FSDP\ndynamo_config: INDUCTOR\n", ":2:16:",
             "dynamo_config: a mapping"),
            # TOML: a bare word is not a value, nor is a string with an escape TOML lacks
            ("bare.toml", "torchtitan", "[model]\nnorm_type = rmsnorm\n", ":2:13:",
             "a value this reader does not take"),
            ("esc.toml", "torchtitan", '[model]\nnorm_type = "rms\\qnorm"\n', ":2:13:",
             "a value this reader does not take"),
            # multi-line strings: one not closed is refused where it starts; after one that
            # spans three lines the next error is at its own line (6) and column (13)
            ("ml1.toml", "torchtitan", '[job]\ndescription = """\nnot closed\n', ":2:15:",
             "a value this reader does not take"),
            ("ml2.toml", "torchtitan", "[job]\ndescription = \'\'\'a\nb\nc\'\'\'\n[model]\n"
             "norm_type = rmsnorm\n", ":6:13:", "a value this reader does not take"),
            # more than 16 MiB: refused before parsing (a double free crashed here)
            ("big.toml", "torchtitan", "#" * (17 << 20), ":", "larger than 16 MiB"),
        ]
        for name, fwk, text, where, what in cases:
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            rc, o, err = run("import", fwk, path, "-o", os.path.join(tmp, name + ".yaml"))
            check(rc == 2 and err.startswith(path + where) and what in err and
                  len(err.strip().splitlines()) == 1 and
                  not os.path.exists(os.path.join(tmp, name + ".yaml")), name + ": " + err)


def deepspeed_stage0():
    # ZeRO stage 0 (the default): DeepSpeed's engine reduces the gradients after the backward
    # (ddp.overlap false) in buckets of 5e8 elements (allreduce_gradients), and stages 1 and 2
    # without overlap_comm (its default below stage 3) after or serially in it, in buckets of
    # reduce_bucket_size (default 5e8). bf16 with data_types.grad_accum_dtype fp32 (or its
    # aliases) at stage 0 (whose offload settings DeepSpeed ignores: listed) or at stage 1
    # without an offloaded optimizer runs BF16_Optimizer: each
    # micro-batch's bf16 gradients accumulated into an fp32 buffer (grad_accumulation
    # cast_add), the optimizer sharded (zero 1), the buffer reduced after the backward
    # whatever overlap_comm says (listed), in 5e8-element buckets, in communication_data_type
    # (bf16 here: 5e8 x 2 B; fp32: x 4 B). Without grad_accum_dtype (DeepSpeed's bf16 default
    # since 0.17.6), with fp16, at stage 2 or with the optimizer offloaded, it does not. Each
    # scenario then runs and fits: Qwen3-0.6B on one DGX A100 (dgx-a100.yaml, 8 GPUs, 64
    # sequences of 2 a step, 1,024 tokens).
    topo = os.path.join(root, "topologies", "dgx-a100.yaml")
    acc32 = {"data_types": {"grad_accum_dtype": "fp32"}}
    cases = (
        ("bf16-acc32", {"bf16": {"enabled": True}, **acc32},
         ["zero: 1", "grad_accumulation: cast_add", "grad_dtype: bf16", "overlap: false",
          "bucket: 1000000000 B"], []),
        ("bf16-acc32-stage1", {"bf16": {"enabled": True}, "zero_optimization": {"stage": 1}, **acc32},
         ["zero: 1", "grad_accumulation: cast_add", "overlap: false"], []),
        ("bf16-float32-stage1-overlap", {"bf16": {"enabled": True}, "communication_data_type": "fp32",
                                         "data_types": {"grad_accum_dtype": "float32"},
                                         "zero_optimization": {"stage": 1, "overlap_comm": True}},
         ["zero: 1", "grad_accumulation: cast_add", "overlap: false", "grad_dtype: fp32",
          "bucket: 2000000000 B"], ["overlap: true"]),
        # stage 0 ignores offload settings (listed): BF16_Optimizer still
        ("bf16-acc32-stage0-offload", {"bf16": {"enabled": True}, **acc32, "zero_optimization":
                                       {"stage": 0, "offload_optimizer": {"device": "cpu"}}},
         ["overlap: false", "grad_accumulation: cast_add", "zero: 1"], ["optimizer: cpu"]),
        ("bf16", {"bf16": {"enabled": True}}, ["overlap: false", "grad_dtype: bf16"],
         ["zero:", "grad_accumulation"]),
        ("fp16-acc32", {"fp16": {"enabled": True}, **acc32}, ["overlap: false"],
         ["zero:", "grad_accumulation"]),
        ("bf16-acc32-stage2", {"bf16": {"enabled": True}, "zero_optimization": {"stage": 2}, **acc32},
         ["zero: 2", "overlap: false", "bucket: 1000000000 B"], ["grad_accumulation"]),
        ("bf16-acc32-offload", {"bf16": {"enabled": True}, **acc32, "zero_optimization":
                                {"stage": 1, "offload_optimizer": {"device": "cpu"}}},
         ["zero: 1", "optimizer: cpu"], ["grad_accumulation"]),
        ("bf16-stage1-overlap", {"bf16": {"enabled": True},
                                 "zero_optimization": {"stage": 1, "overlap_comm": True}},
         ["overlap: true"], ["grad_accumulation"]))
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra, expect, absent in cases:
            src = os.path.join(tmp, name + ".json")
            with open(src, "w") as f:
                json.dump({"train_micro_batch_size_per_gpu": 2, "train_batch_size": 64,
                           "communication_data_type": "bf16", **extra}, f)
            out = os.path.join(tmp, name + ".yaml")
            rc, o, err = run("import", "deepspeed", src, "--topology", topo, "--model", "qwen3-0.6b",
                             "-o", out)
            check(rc == 0, "deepspeed %s imports: %s" % (name, err))
            if rc != 0:
                continue
            text = open(out).read()
            body = text[text.index("name:"):]
            for e in expect:
                check(re.search(r"^\s+" + re.escape(e), body, re.M) is not None,
                      "deepspeed %s: %s in\n%s" % (name, e, body))
            for a in absent:
                check(re.search(r"^\s+" + re.escape(a), body, re.M) is None,
                      "deepspeed %s: no %s in\n%s" % (name, a, body))
            rc, o, err = run("run", out, "--set", "training.seq_len=1024", "--steps", "1", "--json")
            check(rc == 0 and json.loads(o).get("status") == "ok", "deepspeed %s runs: %s" % (name, err[-300:]))
        # a stage DeepSpeed does not have is refused at the field (line 4, column
        # len("  zero_stage: ") + 1 = 15)
        src = os.path.join(tmp, "acc7.yaml")
        with open(src, "w") as f:
            f.write("distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n"
                    "  zero_stage: 7\n")
        rc, o, err = run("import", "accelerate", src, "--topology", topo, "--model", "qwen3-0.6b",
                         "-o", os.path.join(tmp, "acc7-out.yaml"))
        check(rc == 2 and "acc7.yaml:4:15: error: deepspeed_config.zero_stage: 7 is not 0..3" in err
              and not os.path.exists(os.path.join(tmp, "acc7-out.yaml")), "accelerate stage 7: " + err)
        # Accelerate's DeepSpeed plugin has no overlap_comm: below stage 3 DeepSpeed's default
        # (off) holds; at stage 3 stepsim's overlap stands (ZeRO-3 overlaps in its model); no
        # zero_stage is Accelerate's default, 2; a deepspeed_config_file is not read (listed)
        for stage, want, zero in ((2, "false", "2"), (3, None, "3"), (None, "false", "2"),
                                  ("file", None, None)):
            src = os.path.join(tmp, "acc%s.yaml" % stage)
            with open(src, "w") as f:
                f.write("distributed_type: DEEPSPEED\nnum_processes: 8\nmixed_precision: bf16\n"
                        "deepspeed_config:\n  %s\n" % (
                            "deepspeed_config_file: ds.json" if stage == "file" else
                            "gradient_accumulation_steps: 1" if stage is None else
                            "zero_stage: %d" % stage))
            out = os.path.join(tmp, "acc%s-out.yaml" % stage)
            rc, o, err = run("import", "accelerate", src, "--topology", topo, "--model", "qwen3-0.6b",
                             "-o", out)
            body = open(out).read() if rc == 0 else ""
            got = re.search(r"^    overlap: (\w+)", body, re.M)
            gz = re.search(r"^  zero: (\w+)", body, re.M)
            check(rc == 0 and (got.group(1) if got else None) == want and
                  (gz.group(1) if gz else None) == zero and
                  (stage != "file" or "deepspeed_config.deepspeed_config_file" in body) and
                  # below stage 3 DeepSpeed's 5e8-element buckets of 16-bit gradients
                  (("bucket: 1000000000 B" in body) == (want == "false")),
                  "accelerate DeepSpeed stage %s: overlap %s zero %s in %s" % (stage, want, zero, body or err))
        # plain DDP under autocast keeps fp32 parameters, so fp32 gradients: grad_dtype fp32
        # (mixed precision given); without mixed precision nothing is said about it
        for mp, want in (("fp16", "fp32"), ("bf16", "fp32"), (None, None)):
            src = os.path.join(tmp, "ddp%s.yaml" % mp)
            with open(src, "w") as f:
                f.write("distributed_type: MULTI_GPU\nnum_processes: 8\n" +
                        ("mixed_precision: %s\n" % mp if mp else ""))
            out = os.path.join(tmp, "ddp%s-out.yaml" % mp)
            rc, o, err = run("import", "accelerate", src, "--topology", topo, "--model", "qwen3-0.6b",
                             "-o", out)
            body = open(out).read() if rc == 0 else ""
            got = re.search(r"^  grad_dtype: (\w+)", body, re.M)
            check(rc == 0 and (got.group(1) if got else None) == want,
                  "accelerate DDP %s: grad_dtype %s" % (mp, body or err))


def aliases():
    # a framework's name for a stepsim key is answered with stepsim's (one error line, exit 2)
    scen = os.path.join(root, "scenarios", "qwen3-0.6b-h100.yaml")
    for key, want in (("training.gradient_checkpointing=true", "stepsim's is training.recompute: full"),
                      ("training.micro-batch-size=2", "stepsim's is training.micro_batch"),
                      ("parallel.zero_stage=3", "stepsim's is parallel.zero"),
                      ("parallel.tensor_model_parallel_size=2", "stepsim's is parallel.tp"),
                      ("training.gradient_accumulation_steps=4", "training.global_batch = micro_batch x steps x dp"),
                      ("training.use_reentrant=false", "stepsim's is training.recompute_early_stop: true for "
                       "use_reentrant=False")):
        rc, out, err = run("check", scen, "--set", key)
        check(rc == 2 and want in err.splitlines()[0], "%s: %s" % (key, err))


def html():
    # The demo's three runs (Qwen3-4B on two RTX 4090s: DDP, FSDP, TP+SP) as one sweep with
    # timelines, written as one HTML page: self-contained (no script, nothing fetched), with
    # each section a test can find, and rendered by headless Chromium (Debian's package,
    # which scripts/test.sh installs) into a screenshot that shows the page: the throughput
    # bars' blue (#4e79a7) among its pixels.
    sc = os.path.join(root, "scenarios")
    with tempfile.TemporaryDirectory() as tmp:
        sw = os.path.join(tmp, "demo.yaml")
        with open(sw, "w") as f:
            f.write("name: demo\nbase: [%s]\n" % ", ".join(
                os.path.join(sc, "qwen3-4b-2x4090-%s.yaml" % s) for s in ("ddp-bf16", "fsdp-bf16", "tpsp-bf16")))
        h5, page = os.path.join(tmp, "demo.h5"), os.path.join(tmp, "demo.html")
        rc, out, err = run("sweep", sw, "-o", h5, "--timeline")
        check(rc == 0, "the demo's runs: " + err)
        rc, out, err = run("report", h5, "--html", page)
        check(rc == 0 and os.path.exists(page), "report --html: " + err)
        if rc != 0:
            return
        text = open(page).read()
        check("<script" not in text and "http://" not in text and "https://" not in text,
              "self-contained: no script, no fetch")
        ids = ["summary", "verdicts", "figures", "inputs"] + ["%s-%d" % (k, i) for k in
                                                              ("verdict", "timeline", "memory") for i in range(2)]
        check(all('id="%s"' % i in text for i in ids), "sections present: %s" % [i for i in ids if 'id="%s"' % i not in text])
        check("qwen3-4b-2x4090-fsdp-bf16" in text and "oom" in text and "fnv1a64:" in text,
              "the runs, the DDP run's OOM and the inputs' hashes")
        # each run's memory figure draws the rank with the highest peak (rank 0 on these
        # symmetric pairs: the lowest of equal peaks)
        check(text.count("Memory of rank 0 (the highest peak) over the run") == 3, "memory sections")
        chromium = next((c for c in ("chromium", "chromium-browser") if subprocess.run(
            ["sh", "-c", "command -v " + c], capture_output=True).returncode == 0), None)
        check(chromium is not None, "headless Chromium installed (scripts/test.sh installs it)")
        if chromium is None:
            return
        base = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                "--user-data-dir=" + os.path.join(tmp, "profile")]
        dom = subprocess.run(base + ["--dump-dom", "file://" + page], capture_output=True, text=True,
                             timeout=120)
        check(dom.returncode == 0 and all('id="%s"' % i in dom.stdout for i in ids) and
              dom.stdout.count("<svg") >= 9, "Chromium parses every section and figure")
        shot = os.path.join(tmp, "shot.png")
        p = subprocess.run(base + ["--screenshot=" + shot, "--window-size=1200,1600", "file://" + page],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0 and os.path.exists(shot), "screenshot: " + p.stderr[-300:])
        if os.path.exists(shot):
            import matplotlib.image as mpimg
            img = mpimg.imread(shot)
            check(img.shape[:2] == (1600, 1200), "screenshot size %s" % (img.shape,))
            rgb = (img[:, :, :3] * 255).round().astype(int)
            blue = ((abs(rgb[:, :, 0] - 0x4e) <= 3) & (abs(rgb[:, :, 1] - 0x79) <= 3) &
                    (abs(rgb[:, :, 2] - 0xa7) <= 3)).sum()
            check(blue > 500 and rgb.std() > 10, "the page shows its bars: %d blue pixels" % blue)


{"hf": hf, "frameworks": lambda: (frameworks(), deepspeed_stage0(), aliases()), "html": html}[mode]()
if failures:
    print("%d of %d checks failed" % (failures, checks), file=sys.stderr)
    sys.exit(1)
print("%d checks passed" % checks)
