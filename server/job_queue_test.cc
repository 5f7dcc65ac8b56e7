#include "server/job_queue.h"
#include "gtest/gtest.h"
