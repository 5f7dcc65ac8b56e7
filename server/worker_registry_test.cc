#include "server/worker_registry.h"
#include "gtest/gtest.h"
