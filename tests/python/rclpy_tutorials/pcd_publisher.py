# A point cloud publisher in the form of ROS 2's rclpy examples: a moving
# cloud built with point_cloud2.create_cloud from a NumPy array, stamped by
# the node's clock; only the imports differ from rclpy's.
import numpy as np

import shmbus.rclpy as rclpy
from shmbus.rclpy.executors import ExternalShutdownException
from shmbus.rclpy.node import Node
from shmbus import point_cloud2
from shmbus.ros.sensor_msgs.msg import PointCloud2, PointField
from shmbus.ros.std_msgs.msg import Header


class PointCloudPublisher(Node):

    def __init__(self):
        super().__init__('pcd_publisher_node')
        self.points = np.random.default_rng(7).random((10000, 3)).astype(np.float32)
        self.pcd_publisher = self.create_publisher(PointCloud2, 'pcd', 10)
        timer_period = 1 / 30.0
        self.timer = self.create_timer(timer_period, self.timer_callback)
        self.count = 0

    def timer_callback(self):
        self.points[:, 0] = self.count  # the cloud moves: x is the frame number
        self.pcd = point_cloud(self.points, 'map', self.get_clock().now().to_msg())
        self.pcd_publisher.publish(self.pcd)
        self.count += 1


def point_cloud(points, parent_frame, stamp):
    fields = [PointField(name=n, offset=i * 4, datatype=PointField.FLOAT32, count=1)
              for i, n in enumerate('xyz')]
    header = Header(frame_id=parent_frame)
    header.stamp = stamp
    return point_cloud2.create_cloud(header, fields, points)




def main(args=None):
    try:
        with rclpy.init(args=args):
            pcd_publisher = PointCloudPublisher()
            rclpy.spin(pcd_publisher)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == '__main__':
    main()
