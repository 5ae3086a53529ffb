#pragma once
/// @file shmbus.hpp
/// Everything a client of the transport (shmbus::core) needs: include this one header.

#include "shmbus/config.hpp"
#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/input_scope.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/types.hpp"
#include "shmbus/wait_set.hpp"
