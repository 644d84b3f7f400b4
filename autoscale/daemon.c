// SPDX-License-Identifier: Apache-2.0
#include "config.h"
#include "daemon.h"
