"""Hostile data, round 3 (issue 25, classes 2, 3 and the data cases of 5 and 6): `mlnb convert` never loses
data, every size a data file, a manifest or an .npy header sets is bounded before it is allocated, and
overflowing numbers, unwritable folders, over-long lines, changed shard files and long CSV cells each end
in one line naming the file (or are read, for a valid CSV)."""

import csv
import errno
import json
import os
import re

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.errors import MlnbError

SVM = "0 1:1 2:1\n1 2:1 3:2\n0 1:3\n1 3:1\n" * 5  # 20 documents

SHARDS_DATA = """\
[data]
source = "shards"

[data.shards]
path = "{path}"
"""


def invoke(*argv):
    return CliRunner().invoke(app, [str(a) for a in argv])


def one_line_error(result, *needles) -> str:
    """The run ended with exit 2 and one line 'error: ...' holding every needle."""
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, (result.exit_code, result.output, result.exception)
    assert lines[0].startswith("error: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture
def svm(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text(SVM)
    return path


@pytest.fixture
def convert_svm(tiny_config, svm):
    """convert_svm(out, *args) runs `mlnb convert` of the 20 documents of d.svm (5 per shard: 4 shards)."""
    def run(out, *args, path=svm):
        return invoke("convert", tiny_config, out, "--set", f"data.svmlight.path={path}", "--shard-documents", 5,
                      "--quiet", *args)
    return run


def n_documents(folder) -> int:
    from mlnb.data.shards import ShardSource
    from mlnb.data.stream import concatenate

    return concatenate(ShardSource(folder).chunks(100))[0].shape[0]


def shards_config(tmp_path, folder, study_toml):
    config = tmp_path / "shards.toml"
    config.write_text(study_toml(SHARDS_DATA.format(path=folder)))
    return config


# -- class 2: convert never loses data --------------------------------------------------------------------
def test_convert_onto_its_own_input_is_refused_and_keeps_it(tmp_path, convert_svm, study_toml):
    out = tmp_path / "shards"
    assert convert_svm(out).exit_code == 0
    result = invoke("convert", shards_config(tmp_path, out, study_toml), out, "--overwrite", "--quiet")
    one_line_error(result, str(out), "is or contains the input")
    assert n_documents(out) == 20
    # a folder that holds the input is refused too
    one_line_error(invoke("convert", shards_config(tmp_path, out, study_toml), tmp_path, "--overwrite", "--quiet"),
                   "is or contains the input")
    assert n_documents(out) == 20


def test_overwrite_never_follows_a_symlink_named_like_a_shard(tmp_path, convert_svm):
    out = tmp_path / "shards"
    assert convert_svm(out).exit_code == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    (out / "shard-00004").symlink_to(victim, target_is_directory=True)
    before = sorted(p.name for p in out.iterdir())
    one_line_error(convert_svm(out, "--overwrite"), str(out), "symbolic link shard-00004")
    assert sorted(p.name for p in out.iterdir()) == before and n_documents(out) == 20
    assert (victim / "precious.txt").read_text() == "keep me"


def test_overwrite_removes_the_old_conversion_only_once_the_new_one_is_complete(tmp_path, convert_svm):
    out = tmp_path / "shards"
    assert convert_svm(out).exit_code == 0
    bad = tmp_path / "bad.svm"
    bad.write_text(SVM + "1 3:nan\n")  # fails on its last line, after 4 shards
    # with the dimensions given, no scan pass finds the bad line before the conversion starts
    one_line_error(convert_svm(out, "--overwrite", "--set", "data.svmlight.n_features=3", "--set",
                               "data.svmlight.n_categories=2", path=bad), "bad.svm:21")
    assert n_documents(out) == 20  # the earlier conversion, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.svm", "d.svm", "shards", "tiny.toml"]  # no staging
    assert convert_svm(out, "--overwrite").exit_code == 0 and n_documents(out) == 20


def test_a_second_convert_into_the_same_folder_is_refused_while_one_runs(tmp_path, svm):
    from mlnb.data.shards import convert
    from mlnb.data.stream import SvmlightSource

    out = tmp_path / "shards"
    source = SvmlightSource(str(svm))
    errors = []

    class Interleaved(SvmlightSource):
        def chunks(self, chunk_size):
            for k, chunk in enumerate(source.chunks(5)):
                if k == 2:  # the first conversion is half done: a second one starts
                    try:
                        convert(SvmlightSource(str(svm)), out, shard_documents=5, overwrite=True)
                    except MlnbError as error:
                        errors.append(str(error))
                yield chunk

    convert(Interleaved(str(svm)), out, shard_documents=5)
    assert len(errors) == 1 and "another mlnb convert" in errors[0], errors
    assert n_documents(out) == 20


@pytest.mark.parametrize("code, needle", [(errno.EACCES, "Permission denied"), (errno.ENOSPC, "No space left"),
                                          (errno.EROFS, "Read-only file system")])
def test_unwritable_or_full_shard_folder_is_one_line(tmp_path, convert_svm, monkeypatch, code, needle):
    def refuse(path, *args, **kwargs):
        raise (PermissionError if code == errno.EACCES else OSError)(code, os.strerror(code), str(path))

    monkeypatch.setattr(np, "save", refuse)
    out = tmp_path / "shards"
    one_line_error(convert_svm(out), needle, ".npy")
    assert not out.exists()


def test_a_folder_without_room_for_the_next_shard_is_refused_before_writing(tmp_path, convert_svm, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 100, 100))
    one_line_error(convert_svm(tmp_path / "shards"), "of disk, more than the 100 B free")


@pytest.mark.parametrize("value", [0, -3])
def test_shard_documents_errors_name_the_option(tmp_path, convert_svm, value):
    one_line_error(convert_svm(tmp_path / "out", "--shard-documents", value),
                   f"--shard-documents must be a positive integer, got {value}")
    assert not (tmp_path / "out").exists()


# -- class 3: sizes set by the data are bounded before they are allocated -----------------------------------
@pytest.mark.parametrize("streaming", [False, True])
def test_svmlight_label_2_31_is_refused_on_its_line(refused, svmlight_args, streaming):
    refused("data.svm:3:", "label 2147483647", args=[*svmlight_args("0 1:1\n1 2:1\n2147483647 1:1\n"),
                                                     "--set", f"data.streaming={str(streaming).lower()}"])


def test_svmlight_label_beyond_the_category_bound_is_refused_on_its_line(refused, svmlight_args):
    refused("data.svm:3:", "label 5000000", "1,000,000 categories", args=svmlight_args("0 1:1\n1 2:1\n5000000 1:1\n"))


def test_svmlight_dimensions_beyond_memory_are_refused_naming_the_file(refused, svmlight_args):
    # index 2^31 - 1: within int32, but even the least weights of a model (sparse: 24 bytes per feature) are 48 GiB
    refused("data.svm: the sizes it sets need at least 48.0 GiB of memory", "available",
            args=svmlight_args("0 1:1\n1 2147483647:1\n"))


def _damaged_shards(tmp_path, convert_svm, change):
    out = tmp_path / "shards"
    assert convert_svm(out).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    change(out, manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def test_manifest_with_2_million_categories_is_refused_at_open(tmp_path, convert_svm):
    from mlnb.data.shards import ShardSource

    out = _damaged_shards(tmp_path, convert_svm,
                          lambda out, m: m.update(category_names=[f"c{k}" for k in range(2_000_000)]))
    with pytest.raises(MlnbError, match=r"manifest\.json: 2,000,000 categories; expected at most 1,000,000"):
        ShardSource(out)


def test_npy_header_claiming_a_huge_shape_is_refused_before_mapping(tmp_path, convert_svm):
    """A shard whose manifest and .npy header agree on 2^40 values (its bytes and CRC-32 too): refused at
    open, from the manifest, before any array of that size exists."""
    from mlnb.data.shards import ShardSource, _crc32

    def change(out, manifest):
        path = out / "shard-00001" / "X_data.npy"
        header = {"descr": "<f4", "fortran_order": False, "shape": (2**40,)}
        with open(path, "wb") as f:
            np.lib.format.write_array_header_2_0(f, header)
            f.write(b"\0" * 64)
        entry = manifest["shards"][1]
        entry["nnz"] = 2**40
        entry["bytes"]["X_data"] = path.stat().st_size
        entry["crc32"]["X_data"] = _crc32(path)

    out = _damaged_shards(tmp_path, convert_svm, change)
    with pytest.raises(MlnbError, match=r"manifest\.json: shard-00001: more stored values than documents"):
        ShardSource(out)


def test_an_over_long_svmlight_line_is_refused_before_it_is_held(refused, svmlight_args, monkeypatch):
    monkeypatch.setattr("mlnb.data.svmlight.MAX_LINE_BYTES", 2**16, raising=False)
    line = "0 " + " ".join(f"{j}:1" for j in range(1, 40_000))  # ~300 KB, one document
    refused("data.svm:2:", "a line of more than", "one document per line",
            args=[*svmlight_args("1 1:1\n" + line), "--set", "data.streaming=true"])


def test_an_over_long_jsonl_line_is_refused_before_it_is_held(refused, tmp_path, monkeypatch):
    monkeypatch.setattr("mlnb.data.text.MAX_LINE_BYTES", 2**16, raising=False)
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a b", "label": "x"}\n{"text": "' + "w " * 100_000 + '", "label": "y"}\n')
    refused("d.jsonl:2:", "a line of more than 65,536 characters",
            args=["--set", "data.source=text", "--set", f"data.text.path={path}", "--set", "data.streaming=true"])


# -- class 5: overflowing numbers are one line naming the file and line --------------------------------------
@pytest.mark.parametrize("label", ["18446744073709551616", "inf", "1e400", "0,99999999999999999999999"])
def test_svmlight_label_overflow_is_one_line(refused, svmlight_args, label):
    refused("data.svm:3:", "label", args=svmlight_args(f"0 1:1\n1 2:1\n{label} 1:1\n"))


@pytest.mark.parametrize("index", ["2147483649", "4294967297", "99999999999999999999"])
def test_svmlight_feature_index_beyond_int32_is_one_line(refused, svmlight_args, index):
    refused("data.svm:3:", f"feature index {index} is beyond the largest feature index",
            args=svmlight_args(f"0 1:1\n1 2:1\n0 1:1 {index}:1\n"))


def test_unreadable_manifest_is_one_line(tmp_path, convert_svm, monkeypatch, study_toml):
    import pathlib

    out = tmp_path / "shards"
    assert convert_svm(out).exit_code == 0
    real = pathlib.Path.read_text

    def read_text(self, *args, **kwargs):
        if self.name == "manifest.json":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", read_text)
    config = shards_config(tmp_path, out, study_toml)
    one_line_error(invoke("run", config, "--out", tmp_path / "results", "--quiet"), "manifest.json",
                   "Permission denied")


# -- class 6: checksums verified, long CSV cells read -----------------------------------------------------
def test_a_changed_shard_file_is_refused_by_its_checksum(tmp_path, convert_svm, study_toml):
    out = tmp_path / "shards"
    assert convert_svm(out).exit_code == 0
    path = out / "shard-00002" / "X_data.npy"
    values = np.load(path, mmap_mode="r+")
    values[0] = 7.0  # a valid value: no structure check can see the change, only the CRC-32
    values.flush()
    del values
    one_line_error(invoke("run", shards_config(tmp_path, out, study_toml), "--out", tmp_path / "results", "--quiet"),
                   "shard-00002/X_data.npy: corrupt: its CRC-32 differs from the manifest's")


def test_a_valid_csv_with_a_300_kb_cell_is_read(tmp_path, tiny_config):
    path = tmp_path / "long.csv"
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for k in range(8):
            writer.writerow([("spam " if k % 2 else "ham ") * (60_000 if k == 3 else 3), "a" if k % 2 else "b"])
    assert path.stat().st_size > 300_000
    result = invoke("run", tiny_config, "--set", "data.source=text", "--set", f"data.text.path={path}",
                    "--out", tmp_path / "results", "--quiet")
    assert result.exit_code == 0, result.output


def test_a_deeply_nested_json_line_is_one_line_naming_the_file_and_line(tmp_path):
    from mlnb.data.sources import load_dataset
    from mlnb.config import load_config

    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "a b", "label": "x"}\n{"text": ' + "[" * 100_000 + "]" * 100_000 + ', "label": "y"}\n')
    config = load_config(None, ['data.source="text"', f'data.text.path="{path}"'])
    with pytest.raises(MlnbError, match=rf"^{re.escape(str(path))}:2: not a JSON object .*nested too deeply"):
        load_dataset(config.data, 0)


@pytest.mark.parametrize("kind", ["naive_bayes", "logistic", "nb_logistic", "linear_svm"])
def test_a_model_larger_than_memory_or_32_bit_columns_is_refused_before_allocating(kind):
    """The Python API: X's width (2^31 + 1 columns) or its model's size (2^31 − 1 × 3 × 8 bytes) is refused
    by the one fit check every kind goes through, instead of an allocation that the kernel kills."""
    from mlnb.budget import available_memory
    from mlnb.models import get_kind

    Y = sp.csr_matrix(np.array([[1, 0, 1], [0, 1, 1]], dtype=np.int8))
    for V, message in ((2**31 + 1, "features: at most 2147483647"), (2**31 - 1, "needs at least 48.0 GiB")):
        if V == 2**31 - 1 and (available_memory() or 0) > 48 * 2**30:
            continue  # a machine that can hold it
        X = sp.csr_matrix((np.ones(1, dtype=np.float32), (np.zeros(1, dtype=np.int64), np.array([V - 1]))),
                          shape=(2, V))
        with pytest.raises(MlnbError, match=message):
            get_kind(kind).build(get_kind(kind).options()).fit(X, Y)
