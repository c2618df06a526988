"""tilewise.stow and `tilewise convert --stow`: a DICOM WSI series tilewise wrote, stored on a real DICOMweb
server (Orthanc with its DICOMweb plugin) with STOW-RS, then served back: every instance's bytes through
Orthanc, and the pixels through wsidicom reading the series over DICOMweb (WADO-RS), equal to the local
folder's; an authenticated server refuses a request without credentials with an error naming the URL."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import numpy as np
import pydicom
import pytest
import wsidicom
from requests.auth import HTTPBasicAuth

import tilewise
from orthanc_server import OrthancServer
from test_convert import EXE, source  # noqa: F401 (source: a fixture)


@pytest.fixture(scope="module")
def orthanc(tmp_path_factory):
    server = OrthancServer(tmp_path_factory.mktemp("orthanc"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def orthanc_with_users(tmp_path_factory):
    server = OrthancServer(tmp_path_factory.mktemp("orthanc-auth"), users={"pathologist": "s3cret"})
    yield server
    server.stop()


def stored_equal_to(server: OrthancServer, folder, auth=None) -> None:
    """Every instance of `folder` is in the server, byte for byte, and wsidicom reads the series over
    DICOMweb with the local folder's pixels at every level."""
    local = [pydicom.dcmread(p) for p in sorted(folder.iterdir())]
    study, series = local[0].StudyInstanceUID, local[0].SeriesInstanceUID
    for ds, path in zip(local, sorted(folder.iterdir())):
        ids = find_instances(server, ds.SOPInstanceUID)
        assert len(ids) == 1, f"{path.name} is not stored once"
        assert server.get(f"/instances/{ids[0]}/file") == path.read_bytes(), f"{path.name} differs"
    client = wsidicom.WsiDicomWebClient.create_client(server.url, "dicom-web", "dicom-web", auth=auth)
    # frames asked for in their stored transfer syntax (JPEG baseline here: wsidicom 0.36 fails on native
    # frames over DICOMweb, and Orthanc asked for its default would transcode them)
    syntax = local[0].file_meta.TransferSyntaxUID
    with wsidicom.WsiDicom.open_web(client, study, series, requested_transfer_syntax=syntax) as web, wsidicom.WsiDicom.open(folder) as disk:
        assert len(web.levels) == len(disk.levels) == len(local)
        for k, level in enumerate(disk.levels):
            size = (level.size.width, level.size.height)
            np.testing.assert_array_equal(np.asarray(web.read_region((0, 0), k, size)),
                                          np.asarray(disk.read_region((0, 0), k, size)), err_msg=f"level {k}")


def find_instances(server: OrthancServer, sop_uid: str) -> list[str]:
    """Orthanc's identifiers of the instances with this SOP Instance UID (its REST /tools/find)."""
    request = urllib.request.Request(server.url + "/tools/find", method="POST",
                                     data=json.dumps({"Level": "Instance", "Query": {"SOPInstanceUID": sop_uid}}).encode(),
                                     headers={"Content-Type": "application/json", **server.auth_header()})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read())


def test_a_series_is_stored_and_served_back_equal(tmp_path, orthanc, source):
    path, _ = source
    folder = tmp_path / "series"
    tilewise.convert(path, folder, format="dicom", tile_size=256)
    tilewise.stow(folder, orthanc.dicomweb_url + "/")
    stored_equal_to(orthanc, folder)
    tilewise.stow(folder, orthanc.dicomweb_url)  # again: the server keeps one copy of each instance
    stored_equal_to(orthanc, folder)


def test_credentials_are_required_where_the_server_asks_and_errors_name_the_url(tmp_path, orthanc_with_users, source):
    path, _ = source
    folder = tmp_path / "series"
    tilewise.convert(path, folder, format="dicom", levels=2, tile_size=256)
    with pytest.raises(tilewise.IoError, match=r"127\.0\.0\.1:\d+/dicom-web/studies: STOW-RS of level-0\.dcm access denied \(HTTP 401\)"):
        tilewise.stow(folder, orthanc_with_users.dicomweb_url)
    tilewise.stow(folder, orthanc_with_users.dicomweb_url,
                  headers=[f"Authorization: {orthanc_with_users.auth_header()['Authorization']}"])
    stored_equal_to(orthanc_with_users, folder, auth=HTTPBasicAuth("pathologist", "s3cret"))
    with pytest.raises(tilewise.IoError, match="127.0.0.1:1/dicom-web/studies"):
        tilewise.stow(folder, "http://127.0.0.1:1/dicom-web")
    with pytest.raises(tilewise.InvalidArgumentError, match="no DICOM instances"):
        tilewise.stow(tmp_path, orthanc_with_users.dicomweb_url)


@pytest.mark.skipif(EXE is None, reason="the tilewise command is not installed next to this Python")
def test_the_command_converts_and_stores(tmp_path, orthanc, source):
    path, _ = source
    folder = tmp_path / "cli-series"
    r = subprocess.run([EXE, "convert", str(path), str(folder), "--format", "dicom", "--levels", "2", "--stow",
                        orthanc.dicomweb_url], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    stored_equal_to(orthanc, folder)
    r = subprocess.run([EXE, "convert", str(path), str(tmp_path / "x.tif"), "--stow", orthanc.dicomweb_url],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--format dicom" in r.stderr
