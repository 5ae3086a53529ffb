# A service node in the form of ROS 2's rclpy tutorial; only the imports
# differ from rclpy's.
from shmbus.ros.example_interfaces.srv import AddTwoInts

import shmbus.rclpy as rclpy
from shmbus.rclpy.executors import ExternalShutdownException
from shmbus.rclpy.node import Node


class MinimalService(Node):

    def __init__(self):
        super().__init__('minimal_service')
        self.srv = self.create_service(AddTwoInts, 'add_two_ints', self.add_two_ints_callback)

    def add_two_ints_callback(self, request, response):
        response.sum = request.a + request.b
        self.get_logger().info('Incoming request\na: %d b: %d' % (request.a, request.b))

        return response


def main():
    try:
        with rclpy.init():
            minimal_service = MinimalService()

            rclpy.spin(minimal_service)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == '__main__':
    main()
