"""hloprobe.tools.kernel_model_check: bad input is one line and exit 2."""

from hloprobe.tools import kernel_model_check


def test_bad_input_is_one_line(tmp_path, capsys):
  assert kernel_model_check.main([]) == 2
  assert kernel_model_check.main([str(tmp_path / "no.json"), "h200"]) == 2
  good = tmp_path / "r.json"
  good.write_text('{"configs": []}')
  assert kernel_model_check.main([str(good), "cpu"]) == 2
  assert kernel_model_check.main([str(good), "h999"]) == 2
  err = capsys.readouterr().err.splitlines()
  assert len(err) == 4 and all("kernel_model_check" in e for e in err), err


def test_record_without_bit_exact_sites_says_so():
  record = {
    "configs": [
      {
        "case": "seed_mlp",
        "n": 1,
        "precision": "float32",
        "target": "gpu",
        "experiment": "baseline",
        "status": "ok",
        "dot_sites": [
          {
            "index": 0,
            "fate": "cuBLAS",
            "algorithm_evidence": "cuBLAS, f32 operands",
            "split_k": None,
            "effective_algorithm": "F32_F32_F32",
          }
        ],
      }
    ]
  }
  assert kernel_model_check.check_lines(record, "9.0") == [
    "seed_mlp n = 1 float32: no bit-exact site (every site a band)"
  ]
