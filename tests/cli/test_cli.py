"""attnctl as a user meets it (make test-cli).

Every expectation here comes from docs/attnctl.md (exit codes, JSON fields)
or from the fakes' sources (tests/cli/fakes/cli_fake.c), never from
attnctl's own output.
"""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import time

import jsonschema
import pytest

ATTNCTL = os.environ["ATTNCTL"]
FAKES = os.environ["CLI_FAKES"]
SRC = os.environ["SGLATTN_SRC"]
BUILD = os.environ["SGLATTN_BUILD"]
MODELS = os.path.join(SRC, "examples", "models")
LLAMA = os.path.join(MODELS, "llama-3.1-8b.json")
GEMMA = os.path.join(MODELS, "gemma-2-9b.json")        # head dim 256: fake_gpu serves at most 128
DEEPSEEK = os.path.join(MODELS, "deepseek-v3.json")
SCHEMA = json.load(open(os.path.join(SRC, "docs", "attnctl.schema.json")))
COMMANDS = ["list-plugins", "devices", "search-paths", "select", "run", "check", "bench", "report"]

EVIL_SEQ = "\x1b[2J\x1b[H\x1b]52;c;cm0gLXJmIH4=\x07\rusable "
EVIL_REASON = EVIL_SEQ + "".join("word%02d " % i for i in range(40)) + "END"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # anything but \t and \n


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SGL_ATTN_") and k not in ("NO_COLOR", "COLUMNS")}
    e.update(extra)
    return e


def attnctl(*args, plugins=(), extra_env=None, check_rc=None):
    argv = [ATTNCTL, *args]
    if plugins:
        argv += ["--plugin-path", ":".join(os.path.join(FAKES, p) for p in plugins)]
    r = subprocess.run(argv, capture_output=True, text=True, env=env(**(extra_env or {})), errors="surrogateescape")
    if check_rc is not None:
        assert r.returncode == check_rc, (argv, r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return r


def as_json(r):
    d = json.loads(r.stdout)
    jsonschema.validate(d, SCHEMA)
    return d


# ------------------------------------------------------------------ help
def test_every_command_lists_every_option_one_line_each():
    for cmd in COMMANDS:
        r = attnctl(cmd, "--help", check_rc=0)
        assert r.stdout.startswith("Usage: attnctl %s " % cmd)
        assert attnctl("help", cmd, check_rc=0).stdout == r.stdout
        opts = re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", r.stdout, re.M)
        assert len(opts) == len(set(opts)), opts
        assert "--help" in opts
    sel = attnctl("select", "--help", check_rc=0).stdout
    for opt in ("--model", "--tp", "--backend", "--prefill-backend", "--decode-backend", "--draft", "--platform",
                "--graph", "--explain", "--caps-from", "--no-cpu-fallback", "--plugin-path", "--conf", "--no-conf",
                "--validate", "--json"):
        line = [ln for ln in sel.splitlines() if re.match(r"\s+%s\b" % opt, ln)]
        assert len(line) == 1, (opt, line)
        assert len(line[0].split(opt, 1)[1].strip()) > 10, line  # and its help on the same line


def test_version_and_global_help():
    for flag in ("-V", "--version"):
        out = attnctl(flag, check_rc=0).stdout
        assert re.match(r"attnctl \d+\.\d+\.\d+\n", out)
        assert "plugin ABI 1.2" in out and "--json schema 1" in out
    out = attnctl("--help", check_rc=0).stdout
    for cmd in COMMANDS:
        assert re.search(r"^  %s\s" % cmd, out, re.M), cmd
    assert attnctl(check_rc=2).stderr.startswith("Usage: attnctl")


def test_unknown_command_and_option_suggest_the_closest():
    r = attnctl("selct", check_rc=2)
    assert "did you mean 'select'?" in r.stderr
    r = attnctl("list-plugin", check_rc=2)
    assert "did you mean 'list-plugins'?" in r.stderr
    r = attnctl("select", "--modle", LLAMA, check_rc=2)
    assert "unknown option '--modle'" in r.stderr and "did you mean '--model'?" in r.stderr
    assert "attnctl select --help" in r.stderr
    r = attnctl("list-plugins", "--model", LLAMA, check_rc=2)
    assert "an option of select, run" in r.stderr
    r = attnctl("help", "chek", check_rc=2)
    assert "did you mean 'check'?" in r.stderr
    r = attnctl("--verison", check_rc=2)
    assert "did you mean '--version'?" in r.stderr
    r = attnctl("zzzzzz", check_rc=2)
    assert "did you mean" not in r.stderr


def test_completion_script_names_every_command_and_option():
    out = attnctl("completion", "bash", check_rc=0).stdout
    subprocess.run(["bash", "-n"], input=out, text=True, check=True)
    for cmd in COMMANDS:
        assert "    %s)" % cmd in out
    assert "--caps-from" in out and "--no-cpu-fallback" in out
    attnctl("completion", "zsh", check_rc=2)


# ------------------------------------------------------------ exit codes
def test_exit_codes_as_documented(tmp_path):
    bad_conf = tmp_path / "bad.json"
    bad_conf.write_text('{"sglattn_conf": 1,\n  "aliases": [}\n')
    cases = [
        (0, ["list-plugins"]),
        (0, ["select", "--model", LLAMA]),
        (1, ["select", "--model", LLAMA, "--backend", "trtllm_mla"]),           # MLA-only name for Llama
        (1, ["check", "--plugin", "cpu_ref", "--case", "decode:b=1,nosuchkey=1"]),
        (2, ["selct"]),
        (2, ["select", "--modle", LLAMA]),
        (2, ["select"]),                                                          # --model is required
        (2, ["select", "--model"]),                                               # missing value
        (2, ["select", "--model", LLAMA, "--tp", "0"]),
        (2, ["select", "--model", LLAMA, "--platform", "tpu"]),
        (2, ["list-plugins", "--json=yes"]),
        (2, ["bench", "--plugin", "cpu_ref", "--min-time", "-1"]),
        (3, ["select", "--model", str(tmp_path / "missing.json")]),
        (3, ["list-plugins", "--conf", str(bad_conf)]),
        (3, ["select", "--model", LLAMA, "--caps-from", str(bad_conf)]),
        (4, ["select", "--model", LLAMA, "--backend", "no_such_backend"]),
        (4, ["check", "--plugin", "no_such_plugin"]),
        (4, ["bench", "--plugin", "no_such_plugin"]),
        (4, ["run", "--model", LLAMA, "--backend", "no_such_backend", "--len", "8"]),
    ]
    for rc, args in cases:
        r = attnctl(*args)
        assert r.returncode == rc, (args, r.returncode, r.stderr[-600:])
        if rc:
            assert (r.stderr + r.stdout).strip(), args       # a failure always says why
    d = as_json(attnctl("select", "--model", LLAMA, "--backend", "no_such_backend", "--json", check_rc=4))
    assert d["exit_code"] == 4 and not d["ok"] and "Valid names" in d["error"]


# --------------------------------------------------------------- escaping
def _no_control(text, where):
    bad = CONTROL.search(text)
    assert not bad, "%s: raw control character %r at %d: %r" % (where, bad.group(), bad.start(),
                                                               text[max(0, bad.start() - 40):bad.start() + 40])


def test_plugin_text_is_escaped_on_every_human_output():
    runs = {
        "list-plugins": ["list-plugins", "--all"],
        "list-plugins -v": ["list-plugins", "--all", "-v"],
        "list-plugins 80": ["list-plugins"],
        "devices": ["devices"],
        "report": ["report"],
        "explain": ["select", "--model", LLAMA, "--explain"],
        "asked": ["select", "--model", LLAMA, "--backend", "evil"],
        "check": ["check", "--plugin", "evil"],
    }
    for where, args in runs.items():
        r = attnctl(*args, plugins=["evil"], extra_env={"COLUMNS": "80"} if "80" in where else None)
        _no_control(r.stdout, where + " stdout")
        _no_control(r.stderr, where + " stderr")
    v = attnctl("list-plugins", "-v", plugins=["evil"], check_rc=0).stdout
    assert "\\e[2J\\e[H\\e]52;c;cm0gLXJmIH4=\\x07\\rusable" in v     # visible, not interpreted
    dv = attnctl("devices", "-v", plugins=["evil"], check_rc=0).stdout
    assert "evil\\e[31m device\\e]0;title\\x07" in dv and "sm\\r\\e[K90" in dv
    assert "evil cannot use it: \\e[2J\\e[H\\e]52;c;" in dv


def test_json_keeps_plugin_text_exact():
    d = as_json(attnctl("list-plugins", "--json", plugins=["evil"], check_rc=0))
    evil = next(p for p in d["plugins"] if p["name"] == "evil")
    assert evil["status"] == "unavailable"
    assert evil["reason"] == EVIL_REASON                         # whole and exact: ESC, OSC 52, CR, all words
    dev = evil["devices"][0]
    assert dev["reason"] == EVIL_REASON
    assert dev["name"] == "evil\x1b[31m device\x1b]0;title\x07" and dev["arch"] == "sm\r\x1b[K90"


def test_model_fields_and_file_names_are_escaped(tmp_path):
    cfg = json.load(open(os.path.join(MODELS, "llama-3.1-8b-hf.json")))
    cfg["_name_or_path"] = "meta\x1b]52;c;ZXZpbA==\x07\rLlama"
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    r = attnctl("select", "--model", str(p), "--explain", check_rc=0)
    _no_control(r.stdout, "explain of a model whose name has escapes")
    assert "\\e]52;c;ZXZpbA==\\x07\\rLlama" in r.stdout
    cfg["model_type"] = "llama\x1b[2J"
    p.write_text(json.dumps(cfg))
    r = attnctl("select", "--model", str(p), "--explain")
    _no_control(r.stdout + r.stderr, "a model_type with escapes")
    weird = tmp_path / "x\x1b[2Jy\rz.json"
    r = attnctl("select", "--model", str(weird), check_rc=3)
    _no_control(r.stderr, "a file name with escapes")
    assert "x\\e[2Jy\\rz.json" in r.stderr


# ------------------------------------------------------------------ tables
def test_long_reasons_whole_in_verbose_and_json_never_cut_mid_word():
    v = attnctl("list-plugins", "-v", plugins=["evil"], extra_env={"COLUMNS": "80"}, check_rc=0).stdout
    words = re.findall(r"word\d\d|\bEND\b", v)
    assert words == ["word%02d" % i for i in range(40)] + ["END"]
    plain = attnctl("list-plugins", "-v", plugins=["evil"], check_rc=0).stdout   # not a terminal: one line
    assert "word00 word01" in plain and "word39 END" in plain
    for line in attnctl("list-plugins", plugins=["evil"], extra_env={"COLUMNS": "80"}).stdout.splitlines():
        for w in re.findall(r"word\d*", line):
            assert re.fullmatch(r"word\d\d", w), line                     # shortened at a word boundary only


@pytest.mark.parametrize("cols", [80, 120])
def test_tables_fit_the_terminal(cols):
    for args in (["list-plugins"], ["list-plugins", "--all"], ["list-plugins", "-v"], ["devices"],
                 ["devices", "-v"]):
        out = attnctl(*args, plugins=["evil", "claims"], extra_env={"COLUMNS": str(cols)}, check_rc=0).stdout
        for line in out.splitlines():
            assert len(line) <= cols, (args, cols, line)
    first = attnctl("list-plugins", extra_env={"COLUMNS": str(cols)}).stdout.splitlines()[0]
    assert first.startswith("default here: cpu_ref on cpu device 0")


def _pty_run(argv, extra_env, timeout=120):
    """Run under a pseudo-terminal (stdout and stderr a TTY); returns the output."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env(**extra_env))
    out, end = b"", time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 1)
        if not r:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out.decode(errors="replace")


def test_colour_on_a_terminal_and_no_color():
    on = _pty_run([ATTNCTL, "list-plugins"], {"TERM": "xterm"})
    assert "\x1b[32musable" in on
    off = _pty_run([ATTNCTL, "list-plugins"], {"TERM": "xterm", "NO_COLOR": "1"})
    assert "\x1b[" not in off and "usable" in off
    assert "\x1b[" not in attnctl("list-plugins").stdout                       # not a terminal
    assert "\x1b[32m" in attnctl("list-plugins", "--color=always").stdout
    assert "\x1b[" not in _pty_run([ATTNCTL, "list-plugins", "--color=never"], {"TERM": "xterm"})


def test_progress_on_a_terminal_for_check_and_bench():
    out = _pty_run([ATTNCTL, "check", "--plugin", "cpu_ref", "--quick", "--filter", "^decode:b=3"], {"TERM": "xterm"})
    n = len(re.findall(r"(?:^|\x1b\[K) +pass ", out, re.M))
    assert n >= 2
    assert re.search(r"\[1/%d\] 0:\d\d decode:" % n, out), out[:500]
    assert "[%d/%d]" % (n, n) in out
    case = "decode:b=2,l=64,hq=4,hkv=2,d=64,dtype=f32,kvdtype=f32,page=16"
    out = _pty_run([ATTNCTL, "bench", "--plugin", "cpu_ref", "--case", case, "--min-time", "0.02"], {"TERM": "xterm"})
    assert "[1/1] 0:00 " + case[:20] in out
    r = attnctl("check", "--plugin", "cpu_ref", "--quick", "--filter", "^decode:b=3")
    assert "[1/" not in r.stderr                                             # not a terminal: no progress


# ------------------------------------------------------------------- devices
def test_devices_lists_each_device_once_with_its_plugins():
    d = as_json(attnctl("devices", "--json", plugins=["gpu_here", "evil"], check_rc=0))
    keys = [(x["platform"], x["index"]) for x in d["devices"]]
    assert len(keys) == len(set(keys))
    cpu = next(x for x in d["devices"] if x["platform"] == "cpu")
    assert {"cpu_ref"} <= {p["name"] for p in cpu["plugins"] if p["available"]}
    gpu = next(x for x in d["devices"] if x["platform"] == "cuda")
    assert {p["name"]: p["available"] for p in gpu["plugins"]} == {"fake_gpu": True, "evil": False}
    d = as_json(attnctl("devices", "--json", plugins=["gpu_here"], check_rc=0))
    gpu = next(x for x in d["devices"] if x["platform"] == "cuda")
    assert gpu["name"] == "Fake GPU 0" and gpu["compute_units"] == 132 and gpu["memory_bytes"] == 150754820096
    assert [p["name"] for p in gpu["plugins"]] == ["fake_gpu"]
    text = attnctl("devices", plugins=["gpu_here"], check_rc=0).stdout
    assert len([ln for ln in text.splitlines() if ln.startswith("cpu ")]) == 1
    assert re.search(r"^cuda\s+0\s+Fake GPU 0\s+sm_90\s+140\.4 GiB\s+132\s+fake_gpu$", text, re.M), text


# -------------------------------------------------------------- CPU fallback
def test_cpu_fallback_warns_with_why_each_gpu_plugin_refused():
    r = attnctl("select", "--model", GEMMA, plugins=["gpu_here"], check_rc=0)
    assert r.stdout.strip() == "cpu_ref"
    assert "warning: the automatic choice fell back to the CPU (cpu_ref)" in r.stderr
    assert "fake_gpu device 0: head dims qk 256 / v 256 not served" in r.stderr and "[head-dims]" in r.stderr
    d = as_json(attnctl("select", "--model", GEMMA, "--json", plugins=["gpu_here"], check_rc=0))
    assert d["cpu_fallback"] is True and any("fake_gpu" in w for w in d["warnings"])
    r = attnctl("select", "--model", GEMMA, "--no-cpu-fallback", plugins=["gpu_here"], check_rc=1)
    assert "no GPU plugin here serves this model" in r.stderr and "fake_gpu" in r.stderr
    d = as_json(attnctl("select", "--model", GEMMA, "--no-cpu-fallback", "--json", plugins=["gpu_here"], check_rc=1))
    assert not d["ok"] and d["exit_code"] == 1 and not any(v["taken"] for v in d["verdicts"])
    # a model the GPU serves: chosen, no warning; no GPU plugin usable: no warning either
    r = attnctl("select", "--model", LLAMA, plugins=["gpu_here"], check_rc=0)
    assert r.stdout.strip() == "fake_gpu" and not r.stderr
    r = attnctl("select", "--model", GEMMA, plugins=["gpu_absent"], check_rc=0)
    assert r.stdout.strip() == "cpu_ref" and "fell back" not in r.stderr
    # run warns the same way, and --no-cpu-fallback refuses
    r = attnctl("run", "--model", GEMMA, "--len", "8", "--batch", "1", plugins=["gpu_here"], check_rc=0)
    assert "fell back to the CPU" in r.stderr and "fake_gpu" in r.stderr
    attnctl("run", "--model", GEMMA, "--len", "8", "--no-cpu-fallback", plugins=["gpu_here"], check_rc=1)


def test_headline_names_the_asked_platform():
    r = attnctl("select", "--model", LLAMA, "--platform", "cuda", plugins=["gpu_absent", "claims"], check_rc=1)
    assert "no fake GPU here (fakeErrorNoDevice) [fake_gpu: unavailable]" in r.stderr
    r = attnctl("select", "--model", LLAMA, "--platform", "npu", "--plugin-path", "/nonexistent", "--no-conf")
    if r.returncode == 1 and "npu_ascend" not in r.stderr:
        assert "no npu plugin is loaded here" in r.stderr


# --------------------------------------------------------------- caps-from
def test_caps_from_answers_for_the_other_machine(tmp_path):
    machine = tmp_path / "machine.json"
    machine.write_text(attnctl("devices", "--json", plugins=["gpu_here"], check_rc=0).stdout)
    here = attnctl("select", "--model", LLAMA, plugins=["gpu_absent"], check_rc=0)
    assert here.stdout.strip() == "cpu_ref"
    there = attnctl("select", "--model", LLAMA, "--caps-from", str(machine), plugins=["gpu_absent"], check_rc=0)
    assert there.stdout.strip() == "fake_gpu on the machine of %s" % machine
    d = as_json(attnctl("select", "--model", LLAMA, "--caps-from", str(machine), "--json", plugins=["gpu_absent"]))
    assert d["stack"] == ["fake_gpu"] and d["caps_file"] == str(machine)
    # that machine would fall back to the CPU for Gemma, and say why
    d = as_json(attnctl("select", "--model", GEMMA, "--caps-from", str(machine), "--json", plugins=["gpu_absent"]))
    assert d["cpu_fallback"] and any("head dims qk 256" in w for w in d["warnings"])
    # the devices and the default line are that machine's
    lp = attnctl("list-plugins", "--caps-from", str(machine), plugins=["gpu_absent"], check_rc=0).stdout
    assert lp.splitlines()[0].startswith("default on the machine of the caps file here: fake_gpu on cuda device 0")
    # a plugin the file does not list was not on that machine
    d = as_json(attnctl("list-plugins", "--json", "--caps-from", str(machine), plugins=["gpu_absent", "evil"]))
    evil = next(p for p in d["plugins"] if p["name"] == "evil")
    assert evil["status"] == "unavailable" and evil["reason"] == "not on the machine of %s" % machine


def test_caps_file_round_trip_is_exact(tmp_path):
    machine = tmp_path / "m.json"
    machine.write_text(attnctl("devices", "--json", plugins=["gpu_here", "evil"], check_rc=0).stdout)
    back = as_json(attnctl("devices", "--json", "--caps-from", str(machine), plugins=["gpu_absent", "evil"],
                           check_rc=0))
    orig = json.loads(machine.read_text())
    caps = lambda d: {p["name"]: p["devices"] for p in d["plugins"] if p["name"] and p["status"] != "shadowed"}
    a, b = caps(orig), caps(back)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name] == b[name], name                # every field of every device, the long reason too
    assert back["devices"] == orig["devices"]
    assert back["caps_file"] == str(machine) and orig["caps_file"] is None


def test_bad_machine_files_are_refused_with_where(tmp_path):
    f = tmp_path / "m.json"
    f.write_text('{"schema": 1, "command": "list-plugins", "plugins": []}')
    r = attnctl("select", "--model", LLAMA, "--caps-from", str(f), check_rc=3)
    assert "not a machine file" in r.stderr
    good = json.loads(attnctl("devices", "--json", plugins=["gpu_here"]).stdout)
    good["plugins"][[p["name"] for p in good["plugins"]].index("fake_gpu")]["devices"][0]["features"].append("warp")
    f.write_text(json.dumps(good, indent=1))
    r = attnctl("select", "--model", LLAMA, "--caps-from", str(f), check_rc=3)
    assert re.search(r"m\.json:\d+:\d+: .*features", r.stderr) and "expected one of extend" in r.stderr
    good["schema"] = 2
    f.write_text(json.dumps(good))
    assert "schema 2" in attnctl("select", "--model", LLAMA, "--caps-from", str(f), check_rc=3).stderr
    attnctl("select", "--model", LLAMA, "--caps-from", "/dev/null", check_rc=3)


MACHINES = [os.path.join(SRC, "examples", "machines", f) for f in sorted(os.listdir(os.path.join(SRC, "examples",
                                                                                                   "machines")))
            if f.endswith(".json")] if os.path.isdir(os.path.join(SRC, "examples", "machines")) else []
SYNTH = os.path.join(SRC, "tests", "cli", "data", "h200-synthetic.json")


@pytest.mark.parametrize("machine", MACHINES + [SYNTH])
def test_shipped_machine_files_read(machine):
    d = json.load(open(machine))
    jsonschema.validate(d, SCHEMA)
    r = attnctl("select", "--model", LLAMA, "--caps-from", machine)
    assert r.returncode == 0, r.stderr
    have = os.path.exists(os.path.join(BUILD, "lib", "sglattn", "plugins", "cuda_attn.so"))
    if not have:
        assert "is usable on that machine but not loaded here" in r.stderr
        pytest.skip("the CUDA plugins are not built here (NVCC=): the choice itself is not checked")
    assert r.stdout.startswith("cuda_attn on the machine of")
    assert attnctl("select", "--model", DEEPSEEK, "--caps-from", machine, check_rc=0).stdout.startswith("cuda_mla")


# ------------------------------------------------------------------ claims
def test_name_claims_are_flagged_never_silently_resolved(tmp_path):
    d = as_json(attnctl("list-plugins", "--json", plugins=["claims"], check_rc=0))
    notes = {p["name"]: p["notes"] for p in d["plugins"] if p["name"]}
    assert any("its name 'fa3' is a sglang backend name the conf maps to cuda_attn, cuda_mla" in n
               for n in notes["fa3"])
    assert any("declares alias 'fa3', which is the name of plugin fa3" in n for n in notes["claim_fa3"])
    assert any("declares alias 'my_fast', which dup_one" in n and "dup_one answers to 'my_fast', this plugin does not"
               in n for n in notes["dup_two"])
    assert notes["dup_one"] == []
    assert any("declares alias 'cpu_ref', which is the name of plugin cpu_ref" in n for n in notes["alias_name"])
    assert notes["cpu_ref"] == []
    table = attnctl("list-plugins", plugins=["claims"], check_rc=0).stdout
    # (a CUDA build adds one: cuda_attn declares fa3, which here is also a plugin's name)
    n = sum(1 for p in d["plugins"] if p["notes"])
    assert n >= 4 and table.count("    ! ") == sum(len(p["notes"]) for p in d["plugins"] if p["status"] != "shadowed")
    assert "%d with name claims (marked !)" % n in table
    # the loser is told why; the first declarer answers
    r = attnctl("select", "--model", LLAMA, "--backend", "my_fast", "--explain", plugins=["claims"], check_rc=0)
    assert r.stdout.splitlines()[0] == "dup_one"
    assert re.search(r"dup_two\s+0\s+0\s+-\s+alias-claimed\s+declares 'my_fast', but an earlier plugin", r.stdout)
    assert "note: dup_two declares alias 'my_fast'" in r.stdout
    # a plugin named fa3 is taken by its name, with a warning
    r = attnctl("select", "--model", LLAMA, "--backend", "fa3", plugins=["claims"], check_rc=0)
    assert r.stdout.strip() == "fa3" and "is the name of plugin" in r.stderr
    d = as_json(attnctl("select", "--model", LLAMA, "--backend", "fa3", "--json", plugins=["claims"]))
    assert any("sglang backend name" in w for w in d["warnings"])
    # without a plugin named fa3, claim_fa3 serves fa3 by its own claim, and the choice says so
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(os.path.join(FAKES, "claims", "claim_fa3.so"), only / "claim_fa3.so")
    r = attnctl("select", "--model", LLAMA, "--backend", "fa3", "--plugin-path", str(only), check_rc=0)
    assert r.stdout.strip() == "claim_fa3"
    assert "'fa3' was asked for; claim_fa3 serves it by its own claim" in r.stderr
    d = as_json(attnctl("list-plugins", "--json", "--plugin-path", str(only), check_rc=0))
    claim = next(p for p in d["plugins"] if p["name"] == "claim_fa3")
    assert any("declares alias 'fa3', a sglang backend name the conf maps to cuda_attn, cuda_mla on cpu" in n
               for n in claim["notes"])


# ------------------------------------------------------------------- schema
def test_every_command_json_matches_the_schema(tmp_path):
    case = "decode:b=2,l=64,hq=4,hkv=2,d=64,dtype=f32,kvdtype=f32,page=16"
    outs = {
        "list-plugins": attnctl("list-plugins", "--json", "--all", plugins=["evil", "claims", "gpu_here"]),
        "search-paths": attnctl("search-paths", "--json", plugins=["evil"]),
        "devices": attnctl("devices", "--json", plugins=["evil", "gpu_here"]),
        "select ok": attnctl("select", "--model", LLAMA, "--json"),
        "select hybrid": attnctl("select", "--model", os.path.join(MODELS, "qwen3-next-80b-a3b.json"), "--json"),
        "select refused": attnctl("select", "--model", LLAMA, "--backend", "trtllm_mla", "--json"),
        "select fallback": attnctl("select", "--model", GEMMA, "--json", plugins=["gpu_here"]),
        "run": attnctl("run", "--model", LLAMA, "--len", "8", "--batch", "1", "--json"),
        "check": attnctl("check", "--plugin", "cpu_ref", "--quick", "--filter", "^decode:b=3", "--json"),
        "check error": attnctl("check", "--plugin", "cpu_ref", "--case", "decode:b=1,nosuchkey=1", "--json"),
        "bench": attnctl("bench", "--plugin", "cpu_ref", "--case", case, "--case", "nosuchmode:x=1",
                         "--min-time", "0.02", "--json"),
        "report": attnctl("report", "--json", plugins=["evil"], extra_env={"SGL_ATTN_CPU_REF_THREADS": "1"}),
    }
    seen = set()
    for what, r in outs.items():
        assert r.stdout.count("\n") == 1, (what, r.stdout[:300], r.stderr[-300:])    # one object, one line
        d = as_json(r)
        seen.add(d["command"])
        text = r.stdout
        assert '""' not in text, what                                # no empty string for absent
        assert not re.search(r":-1[,}\]]", text), what               # no -1 sentinel
        assert "2147483647" not in text and "4294967295" not in text, what
    assert seen == set(COMMANDS)
    rep = json.loads(outs["report"].stdout)
    assert rep["environment"]["SGL_ATTN_CPU_REF_THREADS"] == "1"
    chk = json.loads(outs["check error"].stdout)
    assert chk["cases"][0]["verdict"] == "ERROR" and chk["cases"][0]["nmse"] is None
    lp = json.loads(outs["list-plugins"].stdout)
    gdn = [p for p in lp["plugins"] if p["name"] == "gdn"]
    if gdn:
        assert gdn[0]["role"] == "hybrid" and gdn[0]["hybrid_kind"] == "gdn"      # role and kind apart
    assert all(p["hybrid_kind"] is None for p in lp["plugins"] if p["role"] == "full")
    mem = [c["memory_bytes"] for p in lp["plugins"] for c in p["devices"] if c["memory_bytes"]]
    assert 150754820096 in mem and all(isinstance(m, int) for m in mem)    # exact integers


def test_report_is_one_block_with_what_a_bug_report_needs():
    out = attnctl("report", plugins=["evil"], extra_env={"CUDA_VISIBLE_DEVICES": "1,0"}, check_rc=0).stdout
    lines = out.splitlines()
    assert lines[0].startswith("---- sglattn report") and lines[-1].startswith("---- sglattn report")
    assert re.search(r"^attnctl \d+\.\d+\.\d+, libsglattn .*plugin ABI 1\.2", out, re.M)
    for part in ("system: ", "conf: ", "search paths:", "environment:", "plugins:", "devices:", "default: "):
        assert any(ln.startswith(part) for ln in lines), part
    assert "  CUDA_VISIBLE_DEVICES=1,0" in lines and "word39 END" in out


def test_bench_counts_the_pairs_each_attention_type_sees():
    """docs/harness.md counts 2 * hq * visible pairs * (d + dv); the visible pairs follow
    abi/sgl_attn.h's attention types: causal (a token sees the prefix and the new tokens up to
    itself), bidirectional (every key of its request), encoder-only (the new tokens only)."""
    hq, d, prefix, new = 2, 64, 64, 32
    pairs = {0: sum(prefix + j + 1 for j in range(new)), 1: new * (prefix + new), 2: new * new}
    for attn, n in pairs.items():
        case = f"extend:b=1,l={prefix + new},q={new},hq={hq},hkv={hq},d={d},dtype=f32,page=16,attn={attn}"
        r = attnctl("bench", "--plugin", "cpu_ref", "--case", case, "--min-time", "0.01", "--json", check_rc=0)
        got = as_json(r)["cases"][0]
        assert got["flops"] == 2 * hq * n * (d + d), (attn, got["flops"])
