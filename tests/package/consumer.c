/* A program that uses an installed coload through its C API, as a user's
 * would: registers FILE with the dry-run runtime for DEVICE, checks which
 * entry bundle 0 chooses and what the lookup of KERNEL gives.
 *
 *   consumer FILE DEVICE KERNEL ENTRY_ID KERNARG_SIZE LDS_SIZE
 *
 * Prints one line and exits 0 when everything is as expected, 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coload/coload.h"

struct chosen {
  char entry_id[256];
  int tier;
  coload_status status;
};

static int take_first(void* user_data, const coload_choice* choice) {
  struct chosen* chosen = (struct chosen*)user_data;
  chosen->status = choice->status;
  chosen->tier = (int)choice->tier;
  snprintf(chosen->entry_id, sizeof chosen->entry_id, "%s", choice->entry_id);
  return 0; /* bundle 0 is enough */
}

static int fail(const char* what, coload_status status) {
  fprintf(stderr, "consumer: %s: %s: %s\n", what, coload_status_string(status), coload_last_error_message());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: consumer FILE DEVICE KERNEL ENTRY_ID KERNARG_SIZE LDS_SIZE\n");
    return 2;
  }
  if (strcmp(coload_version(), COLOAD_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer: library %s, headers %s\n", coload_version(), COLOAD_VERSION_STRING);
    return 1;
  }
  coload_registry_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.runtime = COLOAD_RUNTIME_DRY_RUN;
  options.dry_run_devices = argv[2];
  options.ignore_environment = 1;
  coload_registry* registry = NULL;
  coload_status status = coload_registry_create(&options, &registry);
  if (status != COLOAD_OK) return fail("coload_registry_create", status);

  int result = 1;
  coload_binary binary = 0;
  struct chosen chosen;
  memset(&chosen, 0, sizeof chosen);
  coload_kernel_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if ((status = coload_register_file(registry, argv[1], &binary)) != COLOAD_OK) {
    fail("coload_register_file", status);
  } else if ((status = coload_choose(registry, binary, 0, take_first, &chosen)) != COLOAD_OK) {
    fail("coload_choose", status);
  } else if (chosen.status != COLOAD_OK || strcmp(chosen.entry_id, argv[4]) != 0 || chosen.tier != COLOAD_TIER_NATIVE) {
    fprintf(stderr, "consumer: bundle 0 chose '%s' (tier %d, %s), expected native %s\n", chosen.entry_id, chosen.tier,
            coload_status_string(chosen.status), argv[4]);
  } else if ((status = coload_lookup_kernel(registry, binary, 0, argv[3], &info)) != COLOAD_OK) {
    fail("coload_lookup_kernel", status);
  } else if (info.kernarg_segment_size != strtoul(argv[5], NULL, 0) ||
             info.group_segment_size != strtoul(argv[6], NULL, 0)) {
    fprintf(stderr, "consumer: %s has kernarg %u and LDS %u, expected %s and %s\n", argv[3], info.kernarg_segment_size,
            info.group_segment_size, argv[5], argv[6]);
  } else {
    printf("coload %s (C): %s chose %s; %s kernarg %u LDS %u\n", coload_version(), argv[2], chosen.entry_id, argv[3],
           info.kernarg_segment_size, info.group_segment_size);
    result = 0;
  }
  coload_registry_destroy(registry);
  return result;
}
