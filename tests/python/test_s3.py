"""Slides in S3: moto's S3 server (PyPI) on the loopback address. One server checks every request's
Signature Version 4 against keys made through its IAM API (signed reads equal the local file; a wrong secret
or no signature is refused as access denied, without the secret in the message); another serves anonymous
requests, as a public bucket does."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import dicom_wsi
import servers
import slidegen
import tilewise
import vendor_tiff

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

AWS_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
           "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_NO_SIGN_REQUEST", "AWS_REGION", "AWS_DEFAULT_REGION")


def moto_server(tmp_path_factory, auth: bool):
    port = servers.free_port()
    env = {k: v for k, v in os.environ.items() if k not in AWS_ENV}
    if auth:
        env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"  # create the user, its key and its policy; then every request is checked
    log = open(tmp_path_factory.mktemp("moto") / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    servers.wait_for(port, proc, "moto's server", seconds=30)
    return proc, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    root = tmp_path_factory.mktemp("s3-slides")
    img = slidegen.tissue_image(1100, 800, seed=71)
    files = {"vips.tif": root / "vips.tif", "aperio.svs": root / "aperio.svs"}
    slidegen.write_vips_pyramid(files["vips.tif"], img, tile=128)
    vendor_tiff.write_aperio(files["aperio.svs"], img, codec="jpeg-ycbcr", tile=128, downsamples=(4,))
    files["dir/slide one.dcm"] = dicom_wsi.write_instance(root / "slide one.dcm", img, series=dicom_wsi.new_series(),
                                                          tile=128)
    return files


def upload(client, bucket, files, acl=None):
    client.create_bucket(Bucket=bucket)
    for key, path in files.items():
        client.upload_file(str(path), bucket, key, ExtraArgs={"ACL": acl} if acl else None)


@pytest.fixture(scope="module")
def signed(tmp_path_factory, slides):
    proc, url = moto_server(tmp_path_factory, auth=True)
    iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1", aws_access_key_id="setup",
                       aws_secret_access_key="setup")
    iam.create_user(UserName="reader")
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    iam.put_user_policy(UserName="reader", PolicyName="s3", PolicyDocument=(
        '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'))
    s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id=key["AccessKeyId"],
                      aws_secret_access_key=key["SecretAccessKey"])
    upload(s3, "slides", slides)
    yield {"url": url, "key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    servers.stop(proc)


@pytest.fixture(scope="module")
def anonymous(tmp_path_factory, slides):
    proc, url = moto_server(tmp_path_factory, auth=False)
    upload(boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"),
           "public", slides, acl="public-read")
    yield {"url": url}
    servers.stop(proc)


@pytest.fixture
def aws_env(monkeypatch):
    for k in AWS_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")  # no ~/.aws/credentials of the machine's
    return monkeypatch


def assert_same(remote, local):
    assert remote.format == local.format and remote.levels == local.levels
    assert dict(remote.properties) == dict(local.properties)
    rng = np.random.default_rng(3)
    for level in range(local.level_count):
        w, h = local.levels[level].dimensions
        for _ in range(4):
            x, y = int(rng.integers(-20, w - 40)), int(rng.integers(-20, h - 40))
            ds = local.levels[level].downsample
            loc = (int(x * ds), int(y * ds))
            assert np.array_equal(remote.read_region(loc, (150, 110), level=level),
                                  local.read_region(loc, (150, 110), level=level))


def test_signed_reads_equal_local_files(signed, slides, aws_env):
    aws_env.setenv("AWS_ENDPOINT_URL_S3", signed["url"])
    aws_env.setenv("AWS_ACCESS_KEY_ID", signed["key"])
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", signed["secret"])
    for key, path in slides.items():
        assert_same(tilewise.open(f"s3://slides/{key}"), tilewise.open(path))


def test_credentials_file_profile(signed, slides, aws_env, tmp_path):
    creds = tmp_path / "credentials"
    creds.write_text(f"[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n"
                     f"[lab]\naws_access_key_id = {signed['key']}\naws_secret_access_key = {signed['secret']}\n")
    aws_env.setenv("AWS_ENDPOINT_URL", signed["url"])
    aws_env.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    aws_env.setenv("AWS_PROFILE", "lab")
    assert tilewise.open("s3://slides/vips.tif").levels == tilewise.open(slides["vips.tif"]).levels


def test_wrong_or_missing_signatures_are_access_denied(signed, aws_env):
    aws_env.setenv("AWS_ENDPOINT_URL_S3", signed["url"])
    aws_env.setenv("AWS_ACCESS_KEY_ID", signed["key"])
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(tilewise.IoError, match=r"s3://slides/vips.tif: access denied \(HTTP 403\)") as e:
        tilewise.open("s3://slides/vips.tif")
    assert "not-the-secret" not in str(e.value)
    aws_env.setenv("AWS_NO_SIGN_REQUEST", "1")
    with pytest.raises(tilewise.IoError, match="access denied"):
        tilewise.open("s3://slides/vips.tif")


def test_anonymous_reads_and_missing_objects(anonymous, slides, aws_env):
    aws_env.setenv("AWS_ENDPOINT_URL_S3", anonymous["url"])
    assert_same(tilewise.open("s3://public/aperio.svs"), tilewise.open(slides["aperio.svs"]))
    with pytest.raises(tilewise.NotFoundError):
        tilewise.open("s3://public/missing.svs")
    with pytest.raises(tilewise.InvalidArgumentError, match="names a bucket and a key"):
        tilewise.open("s3://public")
