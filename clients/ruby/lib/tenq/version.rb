# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  VERSION = "0.1.0"
end
