"""The cube's vocabulary (sweep/schema.py) and the on-disk format it describes.

``tests/data/cube_format.json`` was written by the code of main before the schema module
existed (``tests/cube_format.py``); the format of every kind of cube must stay that one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cube_format import SPECS, build

FORMAT = json.loads((Path(__file__).parent / "data" / "cube_format.json").read_text())


@pytest.mark.parametrize("which", sorted(SPECS))
def test_cube_format_is_unchanged(tmp_path, which):
    assert build(tmp_path, which) == FORMAT[which]
