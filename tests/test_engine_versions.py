"""Engines by version (data/engines.json `overlap`, read from each release's source): a version
that keeps the overlap/async scheduler for plain decoding but turns it off for speculation makes
the speculative step pay that CPU work in series; an engine named without a version is predicted as
the preset stands, says so, and the band spans the version that pays it."""

import json

import pytest

from specmodel import Scenario, predict, summarize
from specmodel.cli import main
from specmodel.model.engines import find_engine, named_engine, parse_version

EAGLE_H100 = dict(gpu="H100", target="Llama 3.1 8B", method="eagle3", alpha=0.7, k=3)


@pytest.mark.parametrize("text, expected", [("SGLang v0.5.9", "sglang 0.5.9"), ("vllm 0.10.1.post1", "vllm 0.10.1"),
                                            ("vLLM V1", "vllm"), ("TensorRT-LLM", "trtllm"), ("nothing", None)])
def test_engine_versions_are_read_as_people_write_them(text, expected):
    assert named_engine(text) == expected


@pytest.mark.parametrize("version, pays", [("0.4.2", True), ("0.4.6", True), ("0.5.9", True), ("0.5.10", True),
                                           ("0.5.11", False),
                                           ("0.5.12", False)])
def test_sglang_runs_eagle_without_its_overlap_scheduler_before_0_5_11(version, pays):
    # server_args.py: disable_overlap_schedule = True for EAGLE until spec v2 became the default in v0.5.11
    ms, per_seq = find_engine(f"sglang {version}").serial_cpu("eagle3")
    assert (ms > 0 and per_seq > 0) is pays


@pytest.mark.parametrize("version, eager", [("0.4.2", True), ("0.4.4", True), ("0.4.6", True), ("0.4.7", False),
                                            ("0.5.9", False), (None, False)])
def test_sglang_runs_the_eagle_draft_extend_pass_outside_cuda_graphs_before_0_4_7(version, eager):
    # forward_batch_info.py: ForwardMode.is_cuda_graph() holds DECODE, TARGET_VERIFY and IDLE only, so the
    # DRAFT_EXTEND pass after each verify ran eagerly until v0.4.7 added EAGLEDraftExtendCudaGraphRunner.
    engine = find_engine("sglang" + (f" {version}" if version else ""))
    extra = engine.eager_first_pass_ms("eagle")
    assert (extra == pytest.approx(0.9 - engine.draft_pass_ms)) if eager else extra == 0.0
    assert engine.eager_first_pass_ms("ngram") == 0.0 and find_engine("vllm 0.10.1").eager_first_pass_ms("eagle") == 0.0


def test_an_sglang_0_4_4_eagle_step_costs_the_eager_draft_pass_and_says_so():
    """SGLang v0.4.4 (the issue's example version): overlap off for EAGLE, the draft-extend pass eager, and no
    48-request cap yet (server_args.py resets max_running_requests to 48 from v0.4.5)."""
    s = dict(EAGLE_H100, method="eagle", concurrency=2)
    old = summarize(Scenario.from_names(**s, engine="SGLang v0.4.4"))
    graphed = summarize(Scenario.from_names(**s, engine="SGLang v0.4.7"))
    # ~0.65 ms on a ~10 ms speculative step of Llama 3.1 8B on an H100 at batch 2
    assert float(graphed.prediction.speedup) / float(old.prediction.speedup) == pytest.approx(1.06, abs=0.03)
    assert any("outside CUDA graphs" in n and "0.4.7" in n for n in old.notes)
    assert not any("outside CUDA graphs" in n for n in graphed.notes)
    assert find_engine("sglang 0.4.4").running_cap("eagle") is None
    assert find_engine("sglang 0.4.5").running_cap("eagle") == find_engine("sglang").running_cap("eagle") == 48
    unnamed = summarize(Scenario.from_names(**s, engine="sglang"))
    assert any("version not given" in n and "up to sglang 0.4.6 the draft pass" in n for n in unnamed.notes)
    assert unnamed.band[0] <= float(old.prediction.speedup) * 0.8  # the band spans the eager release


def test_vllm_keeps_async_scheduling_for_eagle_but_not_for_the_cpu_ngram_proposer_from_0_14():
    assert find_engine("vllm 0.14.0").serial_cpu("eagle") == (0.0, 0.0)
    assert find_engine("vllm 0.14.0").serial_cpu("ngram")[0] > 0
    assert find_engine("vllm 0.11.0").serial_cpu("ngram") == (0.0, 0.0)  # async off for both arms: no asymmetry


def test_an_older_sglang_loses_sooner_under_load_than_one_with_overlapped_speculation():
    old = predict(Scenario.from_names(**EAGLE_H100, engine="SGLang v0.5.9"), concurrency=[1, 32, 64]).speedup
    new = predict(Scenario.from_names(**EAGLE_H100, engine="SGLang v0.5.11"), concurrency=[1, 32, 64]).speedup
    assert all(o < n for o, n in zip(old, new))
    assert new[0] / old[0] == pytest.approx(1.08, abs=0.05)  # ~0.75 ms on a ~9 ms speculative step at batch 1


def test_an_engine_without_a_version_says_so_and_its_band_spans_the_older_behaviour():
    unnamed = summarize(Scenario.from_names(**EAGLE_H100, engine="sglang", concurrency=32))
    old = float(predict(Scenario.from_names(**EAGLE_H100, engine="sglang 0.5.10", concurrency=32)).speedup)
    assert any("version not given" in n and "sglang 0.5.10" in n for n in unnamed.notes)
    assert unnamed.band[0] <= old * 0.8 and unnamed.band[1] >= float(unnamed.prediction.speedup)
    named = summarize(Scenario.from_names(**EAGLE_H100, engine="sglang 0.5.11", concurrency=32))
    assert not any("version not given" in n for n in named.notes)


def test_predict_takes_the_version_on_the_command_line_and_reports_it(capsys):
    assert main(["predict", "--gpu", "H100", "--target", "Llama 3.1 8B", "--method", "EAGLE-3", "--engine",
                 "SGLang v0.5.9", "--json"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "sglang" and out["engine_version"] == "0.5.9"  # 'engine' keeps its old value
    assert any("overlaps plain decoding's CPU work" in n for n in out["notes"])


def test_a_version_in_a_text_is_bounded():
    assert parse_version("v" + "9" * 5000) is None and parse_version("x" * 10_000 + " 0.5.9") is None


def test_n_gram_proposal_rate_follows_each_engines_convention():
    """vLLM verifies drafts only for sequences whose n-gram matched and counts acceptance over those
    steps (rate 0.4 by default); SGLang pads every sequence to k drafts every step and averages its
    accept length over all of them (ngram_worker.py, v0.5.9), so no rate is applied on top."""
    from specmodel.model.scenario import NGRAM_PROPOSAL_RATE, Scenario, proposal_rate

    vllm = Scenario.from_names(gpu="H100", target="Llama 3.1 8B", method="ngram", engine="vllm", alpha=0.6, k=4, concurrency=32)
    sglang = Scenario.from_names(gpu="H100", target="Llama 3.1 8B", method="ngram", engine="sglang", alpha=0.6, k=4,
                                 concurrency=32)
    assert proposal_rate(vllm) == NGRAM_PROPOSAL_RATE == 0.4 and proposal_rate(sglang) == 1.0
    assert proposal_rate(Scenario.from_names(method="ngram", engine="sglang", proposal_rate=0.3)) == 0.3  # a measured rate wins


def test_the_sidebar_takes_the_engine_version_as_people_write_it():
    """What-if with SGLang and EAGLE-3: without a version the page says the band spans the versions;
    with "v0.5.9" (overlap scheduler off for speculation) it prices the serial CPU work instead."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    def page(version=None):
        at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=90)
        at.session_state["engine"], at.session_state["method"] = "sglang", "eagle3"
        if version is not None:
            at.session_state["engine_version"] = version
        at.run()
        assert not at.exception
        return at, " ".join(e.value for e in at.info)

    _, shown = page()
    assert "SGLang version not given" in shown and "sidebar's Engine version" in shown
    at, shown = page("v0.5.9")
    assert at.sidebar.text_input(key="engine_version").value == "v0.5.9"
    assert "version not given" not in shown and "SGLang 0.5.9 overlaps plain decoding's CPU work" in shown
    at, _ = page("latest")
    assert any("is not a version number" in w.value for w in at.sidebar.warning)


def test_the_command_line_and_the_sidebar_take_an_attention_backend_after_the_version(capsys):
    import json
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    args = ["predict", "--gpu", "8x MI300X", "--target", "Llama 3.1 70B", "--method", "EAGLE-3", "--context", "32768",
            "--concurrency", "32", "--json", "--engine"]
    assert main([*args, "vLLM 0.19.0 ROCM_AITER_FA"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert main([*args, "vLLM 0.19.0"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert forced["attention_backend"] == "ROCM_AITER_FA" and default["attention_backend"] is None
    assert forced["speedup"] > 1.15 * default["speedup"]  # the default ROCM_ATTN re-reads 32k of KV per query head
    def notes(version):
        at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=90)
        at.session_state["engine"], at.session_state["gpu"] = "vllm", "MI300X"
        at.session_state["engine_version"] = version
        at.run()
        assert not at.exception and not at.sidebar.warning
        return " ".join(e.value for e in at.info)

    assert "one program per query head" in notes("0.19.0")  # the default ROCM_ATTN, and how to avoid it
    assert "one program per query head" not in notes("0.19.0 --attention-backend ROCM_AITER_FA")


@pytest.mark.parametrize("notes, engine", [
    ("Serving: vLLM v0.10.1 (some v0.11.1), H100", "vllm 0.10.1"),
    ("Exact bar labels. vLLM v0.19.0 ROCm, MML 2248", "vllm 0.19.0"),
    ("as in SGLang v0.5.9 (not vLLM)", "sglang 0.5.9"),
    ("vLLM v0-era (2024) implementation, 4 GPUs", "vllm"),  # an era, not a release
    ("vLLM ROCm nightly, 2 runs of 10 seeds", "vllm"),  # the 2 and 10 are not its version
])
def test_a_runs_notes_give_its_engine_with_the_version_written_after_the_name(notes, engine):
    from specmodel.runs import RunDefaults, read_runs

    csv = ("scenario,concurrency,baseline_tok_s,spec_tok_s,k,gpu,target_model,method,notes\n"
           f'chat,8,100,150,3,H100,Llama 3.1 8B,eagle3,"{notes}"\n')
    rows = read_runs([("runs.csv", csv.encode())], RunDefaults()).rows
    assert rows.loc[0, "engine"] == engine


def test_a_version_newer_than_any_release_read_is_predicted_as_the_newest_and_says_so(capsys):
    """SGLang 0.6.0 (not read: data/engines.json reads through 0.5.14) runs EAGLE as 0.5.14 does, with
    the overlap scheduler; the note says the version is beyond what was read, and the band spans the
    overlap-off behaviour as for a version not given."""
    args = ["predict", "--json", "--gpu", "H100", "--target", "Llama 3.1 8B", "--method", "eagle3", "--k", "3",
            "--concurrency", "32"]
    assert main([*args, "--engine", "sglang 0.6.0"]) == 0
    newer = json.loads(capsys.readouterr().out)
    assert main([*args, "--engine", "sglang 0.5.14"]) == 0
    read = json.loads(capsys.readouterr().out)
    assert newer["speedup"] == pytest.approx(read["speedup"])
    notes = " ".join(newer["notes"])
    assert "newer than the newest release read for this preset (0.5.14)" in notes and "sglang 0.5.10" in notes
    assert newer["speedup_low"] < read["speedup_low"]  # the band spans the older scheduler too
    assert "newer than" not in " ".join(read["notes"])


# vLLM's ROCm backend order (vllm/platforms/rocm.py, release wheels 0.18.0, 0.19.0, 0.33.0): from 0.19.0
# ROCM_ATTN comes first for non-MLA models, and its q > 1 path (prefix_prefill.context_attention_fwd)
# runs one program per query head: Llama 3.1 70B's groups of 8 read each KV head 0.8 × 8 = 6.4 times.
LONG_70B_MI300X = dict(gpu="8x MI300X", target="Llama 3.1 70B", method="eagle3", alpha=0.7, k=3,
                       context_len=32768, concurrency=32)


def test_vllm_from_0_19_on_instinct_gpus_verifies_gqa_models_without_packing_the_group():
    old = predict(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.18.0"))
    new = predict(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.19.0"))
    assert float(new.speedup) < 0.85 * float(old.speedup)  # 32k of context: the verify pass reads it 6.4 times
    assert float(new.plain.step_ms) == pytest.approx(float(old.plain.step_ms))  # one-token decode packs the group
    notes = " ".join(summarize(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.19.0")).notes)
    assert "ROCM_ATTN's prefill kernel" in notes and "one program per query head" in notes
    on_h100 = dict(LONG_70B_MI300X, gpu="8x H100")  # FlashAttention-3 on Hopper, any version
    assert float(predict(Scenario.from_names(**on_h100, engine="vllm 0.19.0")).speedup) == \
        pytest.approx(float(predict(Scenario.from_names(**on_h100, engine="vllm 0.18.0")).speedup))
    mla = dict(LONG_70B_MI300X, target="Kimi-K2", gpu="8x MI355X", context_len=8192)  # TRITON_MLA / AITER MLA
    assert float(predict(Scenario.from_names(**mla, engine="vllm 0.19.0")).speedup) == \
        pytest.approx(float(predict(Scenario.from_names(**mla, engine="vllm 0.18.0")).speedup))


def test_vllm_without_a_version_on_an_instinct_gpu_runs_as_the_newest_release_and_spans_the_packed_kernel():
    unnamed = summarize(Scenario.from_names(**LONG_70B_MI300X, engine="vllm"))
    newest = float(predict(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.33.0")).speedup)
    packed = float(predict(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.18.0")).speedup)
    assert float(unnamed.prediction.speedup) == pytest.approx(newest)  # as the overlap terms: the newest release read
    assert unnamed.band[0] <= newest and unnamed.band[1] >= packed  # and the band spans the kernel up to 0.18
    assert any("version not given" in n and "up to vllm 0.18.x" in n and "packs the GQA group" in n
               for n in unnamed.notes)


def test_an_attention_backend_forced_after_the_version_is_the_kernel_predicted():
    """AMD's speculative recipes force --attention-backend ROCM_AITER_FA (InferenceX
    minimaxm2.5_fp8_mi355x_eagle3.sh), whose verify pass packs the GQA group (AITER's unified attention):
    written after the version as people write it, it is predicted as the packed kernel, the band no
    longer spans the default's, and the commands the tool writes start the servers with it."""
    from specmodel.export.deploy import deploy_by_engine
    from specmodel.model.engines import find_engine, named_engine
    from specmodel.plan.measure import measurement_plan
    forced = Scenario.from_names(**LONG_70B_MI300X, engine=named_engine("vLLM v0.19.0 --attention-backend rocm_aiter_fa"))
    assert str(forced.engine) == "vllm 0.19.0 ROCM_AITER_FA"
    packed = float(predict(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.18.0")).speedup)
    assert float(predict(forced).speedup) == pytest.approx(packed)
    summary = summarize(forced)
    assert not any("one program per query head" in n for n in summary.notes)
    assert summary.band == summarize(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.18.0")).band
    assert find_engine("vllm 0.17.0 ROCM_ATTN").unpacks_verify("MI300X")  # named: its own kernel at any version
    assert not find_engine("vllm 0.19.0 ROCM_AITER_FA").unpacks_verify("MI300X")
    # the drafter runs the backend named too: PR #47854's ROCM_ATTN acceptance caveat follows it
    assert find_engine("vllm 0.19.0").acceptance_caveat("eagle3", "MI300X") is not None
    assert find_engine("vllm 0.19.0 ROCM_AITER_FA").acceptance_caveat("eagle3", "MI300X") is None
    assert find_engine("vllm 0.17.0 ROCM_ATTN").acceptance_caveat("eagle3", "MI300X") is not None
    by_engine, _ = deploy_by_engine(summary)
    assert "--attention-backend ROCM_AITER_FA" in by_engine["vllm"]["command"]
    servers = measurement_plan(summary).servers
    assert all("--attention-backend ROCM_AITER_FA" in cmd for cmd in servers.values())


def test_the_rocm_verify_kernel_computes_whole_128_row_query_tiles():
    """prefix_prefill.py launches BLOCK_M = 128 query rows per program: a k = 3 verify pass (4 rows)
    does 32 times the attention arithmetic its rows need; the term grows with context and batch."""
    from specmodel.model.engines import find_engine
    assert find_engine("vllm 0.19.0").verify_query_tile("MI355X") == 128
    assert find_engine("vllm 0.18.0").verify_query_tile("MI355X") == 0
    assert find_engine("vllm 0.19.0").verify_query_tile("MI355X", "mla") == 0
    short = dict(LONG_70B_MI300X, context_len=2048)
    gap_short = float(predict(Scenario.from_names(**short, engine="vllm 0.18.0")).speedup) / \
        float(predict(Scenario.from_names(**short, engine="vllm 0.19.0")).speedup)
    gap_long = float(predict(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.18.0")).speedup) / \
        float(predict(Scenario.from_names(**LONG_70B_MI300X, engine="vllm 0.19.0")).speedup)
    assert 1.0 < gap_short < gap_long


def test_a_version_older_than_any_release_read_says_so_and_its_band_spans_the_other_behaviours():
    old = summarize(Scenario.from_names(**EAGLE_H100, engine="sglang 0.3.0", concurrency=32))
    assert any("older than the oldest release read for this preset (0.4.2)" in n for n in old.notes)
    paying = float(predict(Scenario.from_names(**EAGLE_H100, engine="sglang 0.5.10", concurrency=32)).speedup)
    assert old.band[0] <= paying * 0.8  # spans the release that pays the serial CPU term
    assert not any("older than" in n for n in summarize(Scenario.from_names(**EAGLE_H100, engine="vllm 0.10.1")).notes)
    assert any("V0 engine" in n for n in summarize(Scenario.from_names(**EAGLE_H100, engine="vllm 0.6.3")).notes)
    # v0.9.0 runs EAGLE on V1 by default, proposer in CUDA graphs (arg_utils.py, v1/spec_decode/eagle.py); 0.8.5 not
    assert not any("older than" in n for n in summarize(Scenario.from_names(**EAGLE_H100, engine="vllm 0.9.2")).notes)
    assert any("V0 engine" in n for n in summarize(Scenario.from_names(**EAGLE_H100, engine="vllm 0.8.5")).notes)


def test_an_eagle3_acceptance_on_vllm_rocm_from_0_19_comes_with_the_drafter_defect_and_its_workaround():
    """vLLM PR #47854: EAGLE-3's drafter on ROCM_ATTN (the default from 0.19.0 on Instinct GPUs) can
    accept far less than on CUDA, so a published or CUDA acceptance may not hold there."""
    def notes(**change):
        s = dict(LONG_70B_MI300X, method="eagle3", draft=None, context_len=2048)
        s.update(change)
        return " ".join(summarize(Scenario.from_names(**s)).notes)
    for engine in ("vllm 0.19.0", "vllm"):  # a version not given runs as the newest release read
        text = notes(engine=engine)
        assert "PR #47854" in text and "ROCM_AITER_UNIFIED_ATTN" in text and "measured on this engine" in text
    assert "PR #47854" not in notes(engine="vllm 0.18.0")  # TRITON_ATTN before 0.19
    assert "PR #47854" not in notes(engine="vllm 0.19.0", gpu="8x H100")  # CUDA
    assert "PR #47854" not in notes(engine="vllm 0.19.0", method="eagle")  # the EAGLE-3 layer-0 path only
    assert "PR #47854" not in notes(engine="sglang 0.5.9")


def test_a_run_files_engine_column_takes_the_attention_backend(tmp_path, capsys):
    import json

    path = tmp_path / "rocm.csv"
    path.write_text("workload,gpu,target_model,method,k,alpha,concurrency,context_len,engine,speedup\n"
                    "long,8x MI300X,Llama 3.1 70B,eagle3,3,0.7,32,32768,vLLM 0.19.0 ROCM_AITER_FA,1.3\n"
                    "long,8x MI300X,Llama 3.1 70B,eagle3,3,0.7,32,32768,vLLM 0.19.0,1.3\n")
    assert main(["runs", str(path), "--json"]) == 0
    forced, default = json.loads(capsys.readouterr().out)["rows"]
    assert forced["engine"] == "vllm 0.19.0 ROCM_AITER_FA" and default["engine"] == "vllm 0.19.0"
    assert forced["predicted_speedup"] > 1.15 * default["predicted_speedup"]
