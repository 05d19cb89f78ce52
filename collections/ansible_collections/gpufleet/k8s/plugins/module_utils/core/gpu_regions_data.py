# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Recorded regional catalog: which NVIDIA GPU offerings each cloud region (GCP: zone) has.

RECORDED CATALOG, NOT A LIVE QUERY. Update it from the sources below, never from gpufleet's code;
tests/unit/test_gpu_regions.py holds facts read from the same sources that fail on wrong data.
A region missing here is reported as a warning (not checked), never refused.

AWS: EC2 GPU instance families offered per region, as DescribeInstanceTypeOfferings
(--location-type region) answers; families as in core/gpu_catalog.py (eks_families). Zones are not
recorded for AWS: a zone name (us-east-1a) maps to a different physical zone in each account.

GCP: accelerator types per zone, as ``gcloud compute accelerator-types list`` answers (the machine
family's accelerator for A2/A3/G2, the attached GPU for N1), the names of core/gpu_catalog.py
(gke_accelerator). A zone of a recorded region that is missing here offers none of these.

Read on 2026-12-03 from the public SkyPilot catalog (github.com/skypilot-org/skypilot-catalog,
catalogs/v7/aws/vms.csv at 001367d2, catalogs/v7/gcp/vms.csv at 017e2502), which records what the
providers' APIs (EC2 DescribeInstanceTypeOfferings, Compute Engine machine and accelerator types)
answered per region and zone, plus, for g5, the DescribeInstanceTypeOfferings answer for
g5.2xlarge quoted in github.com/validatedpatterns/rag-llm-gitops/pull/52. Facts only, written here
in our own form. Not in that catalog, so not recorded (a warning, never a refusal): p6-b200 (AWS
b200) and nvidia-b200 (GCP b200).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

SOURCE = ("SkyPilot catalog v7 (EC2 DescribeInstanceTypeOfferings, Compute Engine accelerator types per zone), "
          "read 2026-12-03; see core/gpu_regions_data.py")
RECORDED = "2026-12-03"

# region -> EC2 GPU instance families offered there (space separated)
AWS_REGIONS = {
    "us-east-1": "g4dn g5 g6 g6e p3 p3dn p4d p4de p5 p5en",
    "us-east-2": "g4dn g5 g6 g6e p3 p4d p5 p5e p5en",
    "us-west-1": "g4dn g5 p5 p5en",
    "us-west-2": "g4dn g5 g6 g6e p3 p3dn p4d p4de p5 p5e p5en",
    "ca-central-1": "g4dn g5 g6 p3 p5",
    "eu-west-1": "g4dn g5 p3 p3dn p4d",
    "eu-west-2": "g4dn g5 g6 p3 p5 p5e",
    "eu-west-3": "g4dn g5 g6",
    "eu-central-1": "g4dn g5 g6 g6e p3 p4d",
    "eu-north-1": "g4dn g5 g6 g6e p5 p5e",
    "ap-northeast-1": "g4dn g5 g6 g6e p3 p3dn p4d p5 p5en",
    "ap-northeast-2": "g4dn g5 g6 g6e p3 p4d p5en",
    "ap-south-1": "g4dn g5 g6 p4d p5 p5en",
    "ap-southeast-1": "g4dn g5 p3",
    "ap-southeast-2": "g4dn g5 g6 p3 p4d p5 p5e",
}

_T4, _V100, _L4 = "nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-l4"
_A100, _A100_80, _H100, _H200 = "nvidia-tesla-a100", "nvidia-a100-80gb", "nvidia-h100-80gb", "nvidia-h200-141gb"

# zone -> accelerator types offered there
GCP_ZONES = {
    "us-central1-a": (_T4, _V100, _L4, _A100, _A100_80, _H100),
    "us-central1-b": (_T4, _V100, _L4, _A100, _H100, _H200),
    "us-central1-c": (_T4, _V100, _L4, _A100, _A100_80, _H100),
    "us-central1-f": (_T4, _V100, _A100),
    "us-east1-b": (_L4, _A100),
    "us-east1-c": (_T4, _V100, _L4),
    "us-east1-d": (_T4, _L4),
    "us-east4-a": (_T4, _L4, _H100),
    "us-east4-b": (_T4, _H100, _H200),
    "us-east4-c": (_T4, _L4, _A100_80, _H100),
    "us-west1-a": (_T4, _V100, _L4, _H100),
    "us-west1-b": (_T4, _V100, _L4, _A100, _H100),
    "us-west1-c": (_L4, _H200),
    "us-west4-a": (_T4, _L4, _H100),
    "us-west4-b": (_T4, _A100),
    "us-west4-c": (_L4,),
    "europe-west1-b": (_T4, _L4, _H100, _H200),
    "europe-west1-c": (_T4, _L4, _H100),
    "europe-west1-d": (_T4,),
    "europe-west4-a": (_T4, _V100, _L4, _A100, _A100_80, _H200),
    "europe-west4-b": (_T4, _V100, _L4, _A100, _H100),
    "europe-west4-c": (_T4, _V100, _L4, _H100),
    "asia-southeast1-a": (_T4, _L4),
    "asia-southeast1-b": (_T4, _L4, _A100, _H100),
    "asia-southeast1-c": (_T4, _L4, _A100, _A100_80, _H100),
    "asia-northeast1-a": (_T4, _L4, _A100),
    "asia-northeast1-b": (_L4, _H100),
    "asia-northeast1-c": (_T4, _L4, _A100),
}
