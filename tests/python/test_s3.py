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
        env["INITIAL_NO_AUTH_ACTION_COUNT"] = "6"  # create two users, their keys and policies; then every request is checked
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
    # A DICOM series of one object per instance (levels, label, overview, thumbnail), as the Imaging Data
    # Commons stores them, beside an object of another kind and a deeper folder whose series is another one.
    series = dicom_wsi.write_series(root / "series", slidegen.tissue_image(1400, 1000, seed=72), levels=3, tile=128,
                                    name="case 7")
    for f in sorted(series.parent.glob("*.dcm")):
        files[f"series/{f.name}"] = f
    (root / "notes.txt").write_text("not a slide")
    files["series/notes.txt"] = root / "notes.txt"
    files["series/deeper/other.dcm"] = dicom_wsi.write_instance(root / "other.dcm", img, series=dicom_wsi.new_series(),
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
    iam.create_user(UserName="getter")  # may read objects, may not list the bucket
    getter = iam.create_access_key(UserName="getter")["AccessKey"]
    iam.put_user_policy(UserName="getter", PolicyName="get", PolicyDocument=(
        '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}'))
    s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id=key["AccessKeyId"],
                      aws_secret_access_key=key["SecretAccessKey"])
    upload(s3, "slides", slides)
    yield {"url": url, "key": key["AccessKeyId"], "secret": key["SecretAccessKey"],
           "getter": (getter["AccessKeyId"], getter["SecretAccessKey"])}
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
        if key.endswith(".txt"):
            continue
        assert_same(tilewise.open(f"s3://slides/{key}"), tilewise.open(path))


def dicom_series(slides):
    return sorted(k for k in slides if k.startswith("series/") and k.count("/") == 1 and k.endswith(".dcm"))


def test_a_dicom_series_is_listed_beside_the_object(signed, slides, aws_env):
    """Any instance of a series, or its folder, opens the whole series: the bucket's folder is listed (signed
    requests), as a local folder is scanned; the deeper folder's and the text object are not part of it."""
    aws_env.setenv("AWS_ENDPOINT_URL_S3", signed["url"])
    aws_env.setenv("AWS_ACCESS_KEY_ID", signed["key"])
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", signed["secret"])
    level0 = next(k for k in dicom_series(slides) if "level0" in k)
    local = tilewise.open(slides[level0])
    assert local.level_count == 3 and sorted(local.associated_images) == ["label", "macro", "thumbnail"]
    for url in (f"s3://slides/{level0}", "s3://slides/series/", f"s3://slides/{dicom_series(slides)[-1]}"):
        remote = tilewise.open(url)
        assert_same(remote, local)
        assert sorted(remote.associated_images) == sorted(local.associated_images)
        for key in local.associated_images:
            assert np.array_equal(remote.associated_images[key], local.associated_images[key])


def test_object_listings_are_read_page_by_page(signed, slides, aws_env):
    """Listings of more keys than a page holds follow the store's markers (pages of 2 keys here)."""
    code = ("import tilewise, sys; s = tilewise.open(sys.argv[1]); "
            "print(s.level_count, sorted(s.associated_images))")
    env = {k: v for k, v in os.environ.items() if k not in AWS_ENV}
    env.update(AWS_ENDPOINT_URL_S3=signed["url"], AWS_ACCESS_KEY_ID=signed["key"],
               AWS_SECRET_ACCESS_KEY=signed["secret"], HOME="/nonexistent", TILEWISE_LIST_PAGE_KEYS="2")
    out = subprocess.run([sys.executable, "-c", code, "s3://slides/series/"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "3 ['label', 'macro', 'thumbnail']"


def test_an_unlistable_bucket_opens_the_instance_alone(signed, slides, aws_env):
    """A key that may read objects but not list the bucket: an instance opens alone and says why; the folder
    itself cannot be opened (access denied, named by its URL)."""
    aws_env.setenv("AWS_ENDPOINT_URL_S3", signed["url"])
    aws_env.setenv("AWS_ACCESS_KEY_ID", signed["getter"][0])
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", signed["getter"][1])
    level0 = next(k for k in dicom_series(slides) if "level0" in k)
    alone = tilewise.open(f"s3://slides/{level0}")
    assert alone.level_count == 1 and not alone.associated_images
    assert any("other instances of its series were not looked for" in w and "access denied (HTTP 403)" in w
               for w in alone.warnings), alone.warnings
    with pytest.raises(tilewise.IoError, match=r"s3://slides/series/: access denied \(HTTP 403\)"):
        tilewise.open("s3://slides/series/")


def test_anonymous_reads_and_missing_objects(anonymous, slides, aws_env):
    aws_env.setenv("AWS_ENDPOINT_URL_S3", anonymous["url"])
    assert_same(tilewise.open("s3://public/aperio.svs"), tilewise.open(slides["aperio.svs"]))
    with pytest.raises(tilewise.NotFoundError):
        tilewise.open("s3://public/missing.svs")
    with pytest.raises(tilewise.InvalidArgumentError, match="names a bucket and a key"):
        tilewise.open("s3://public")
    # GCS lists a bucket through the same XML answer (ListBucketResult): moto's stands in for it.
    aws_env.setenv("TILEWISE_GCS_ENDPOINT", anonymous["url"])
    level0 = next(k for k in dicom_series(slides) if "level0" in k)
    remote = tilewise.open(f"gs://public/{level0}")
    assert_same(remote, tilewise.open(slides[level0]))
    assert sorted(remote.associated_images) == ["label", "macro", "thumbnail"]
