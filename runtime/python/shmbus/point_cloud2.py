"""sensor_msgs/PointCloud2 from and to structured NumPy arrays, as ROS 2's
``sensor_msgs_py.point_cloud2`` has them: ``from shmbus import
point_cloud2`` where rclpy code has ``from sensor_msgs_py import
point_cloud2``. A cloud's points are copied into the message in one block
(``create_cloud``) and read where they lie (``read_points``: a structured
array over the message's bytes, no copy)."""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Iterable, Sequence

import numpy as np
from numpy.lib import recfunctions

from ._messages import Message, type_of
from .errors import InvalidArgumentError

# PointField's datatype constants (sensor_msgs/PointField) and their dtypes.
_DATATYPES = {1: np.dtype("i1"), 2: np.dtype("u1"), 3: np.dtype("<i2"), 4: np.dtype("<u2"), 5: np.dtype("<i4"),
              6: np.dtype("<u4"), 7: np.dtype("<f4"), 8: np.dtype("<f8")}


def _field(f: Any, name: str) -> Any:
    return f[name] if isinstance(f, dict) else getattr(f, name)


def dtype_from_fields(fields: Iterable[Any], point_step: int | None = None) -> np.dtype:
    """The structured dtype of a point with `fields` (PointField messages or
    dicts): each field's name, datatype, offset and count."""
    names, formats, offsets = [], [], []
    for i, f in enumerate(fields):
        datatype = _DATATYPES.get(int(_field(f, "datatype")))
        if datatype is None:
            raise InvalidArgumentError(f"fields[{i}].datatype: {_field(f, 'datatype')} is not a PointField datatype "
                                       f"(1 INT8 to 8 FLOAT64)")
        count = int(_field(f, "count"))
        name = _field(f, "name") or f"unnamed_field_{i}"
        names.append(name)
        formats.append(datatype if count == 1 else (datatype, (count,)))
        offsets.append(int(_field(f, "offset")))
    spec: dict[str, Any] = {"names": names, "formats": formats, "offsets": offsets}
    if point_step is not None:
        spec["itemsize"] = point_step
    return np.dtype(spec)


def create_cloud(header: Any, fields: Sequence[Any], points: Any, point_step: int | None = None) -> Message:
    """A sensor_msgs/PointCloud2 (height 1) of `points`: a structured array
    (fields matched by name), an (N, number of fields) array, or a list of
    tuples."""
    dtype = dtype_from_fields(fields, point_step)
    if isinstance(points, np.ndarray) and points.dtype.names is not None:
        if points.dtype == dtype:
            cloud = np.ascontiguousarray(points).reshape(-1)
        else:
            cloud = np.zeros(points.size, dtype)
            for name in dtype.names:
                if name not in points.dtype.names:
                    raise InvalidArgumentError(f"points: no field '{name}' (the points have "
                                               f"{', '.join(points.dtype.names)})")
                cloud[name] = points[name].reshape(-1)
    else:
        a = np.asarray(points) if not isinstance(points, list) or not points or not isinstance(
            points[0], tuple) else None
        if a is not None and a.ndim == 2:
            plain = np.dtype({"names": dtype.names, "formats": [dtype.fields[n][0] for n in dtype.names]})
            cloud = np.zeros(len(a), dtype)
            filled = recfunctions.unstructured_to_structured(a, plain)
            for name in dtype.names:
                cloud[name] = filled[name]
        else:
            cloud = np.array([tuple(p) for p in points], dtype)
    PointCloud2 = type_of("sensor_msgs/PointCloud2")
    assert PointCloud2 is not None
    return PointCloud2.new(header=header, height=1, width=len(cloud), is_dense=False, is_bigendian=False,
                           fields=list(fields), point_step=dtype.itemsize, row_step=dtype.itemsize * len(cloud),
                           data=cloud.view(np.uint8).reshape(-1))


def create_cloud_xyz32(header: Any, points: Any) -> Message:
    """A cloud of float32 x, y, z from an (N, 3) array or a list of points."""
    PointField = type_of("sensor_msgs/PointField")
    assert PointField is not None
    fields = [PointField.new(name=n, offset=4 * i, datatype=7, count=1) for i, n in enumerate("xyz")]
    return create_cloud(header, fields, points)


def read_points(cloud: Any, field_names: Sequence[str] | None = None, skip_nans: bool = False,
                uvs: Iterable[Any] | None = None, reshape_organized_cloud: bool = False) -> np.ndarray:
    """The cloud's points as a structured array over the message's bytes
    (read-only where the message is), only `field_names` if given; with
    `skip_nans` the points with a NaN left out (a copy), with `uvs` only
    those points (index or (u, v) pairs)."""
    if bool(cloud.is_bigendian):
        raise InvalidArgumentError("read_points: a big-endian cloud is not supported")
    dtype = dtype_from_fields(cloud.fields, int(cloud.point_step))
    n = int(cloud.width) * int(cloud.height)
    data = cloud.data
    if not isinstance(data, np.ndarray):
        data = np.frombuffer(data, np.uint8)
    row_step = int(cloud.row_step)
    if row_step != int(cloud.width) * int(cloud.point_step) and int(cloud.height) > 1:
        rows = [np.ndarray((int(cloud.width),), dtype, buffer=data, offset=r * row_step)
                for r in range(int(cloud.height))]
        points = np.concatenate(rows)
    else:
        if len(data) < n * dtype.itemsize:
            raise InvalidArgumentError(f"read_points: {n} points of {dtype.itemsize} bytes need {n * dtype.itemsize} "
                                       f"bytes; the cloud's data holds {len(data)}")
        points = np.ndarray((n,), dtype, buffer=data)
    if field_names is not None:
        points = points[list(field_names)]
    if uvs is not None:
        index = [u if isinstance(u, (int, np.integer)) else u[1] * int(cloud.width) + u[0] for u in uvs]
        points = points[index]
    if skip_nans:
        keep = np.ones(len(points), bool)
        for name in points.dtype.names:
            column = points[name]
            if column.dtype.kind == "f":
                keep &= ~np.isnan(column).reshape(len(points), -1).any(axis=1)
        points = points[keep]
    if reshape_organized_cloud and int(cloud.height) > 1 and uvs is None and not skip_nans:
        points = points.reshape(int(cloud.height), int(cloud.width))
    return points


def read_points_numpy(cloud: Any, field_names: Sequence[str] | None = None, skip_nans: bool = False,
                      uvs: Iterable[Any] | None = None, reshape_organized_cloud: bool = False) -> np.ndarray:
    """read_points as an unstructured (N, fields) array (every field of one
    type)."""
    points = read_points(cloud, field_names, skip_nans, uvs, reshape_organized_cloud)
    kinds = {points.dtype.fields[n][0] for n in points.dtype.names}
    if len(kinds) != 1:
        raise InvalidArgumentError("read_points_numpy needs fields of one type; use read_points")
    return recfunctions.structured_to_unstructured(points)


def read_points_list(cloud: Any, field_names: Sequence[str] | None = None, skip_nans: bool = False,
                     uvs: Iterable[Any] | None = None) -> list:
    """read_points as a list of named tuples."""
    points = read_points(cloud, field_names, skip_nans, uvs)
    Point = namedtuple("Point", points.dtype.names)  # type: ignore[misc]
    return [Point._make(p) for p in points.tolist()]


__all__ = ["create_cloud", "create_cloud_xyz32", "dtype_from_fields", "read_points", "read_points_list",
           "read_points_numpy"]
