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
family's accelerator for A2/A3/A4/G2, the attached GPU for N1), the names of core/gpu_catalog.py
(gke_accelerator).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

SOURCE = ("AWS: DescribeInstanceTypeOfferings results per region; GCP: Google Cloud 'GPU locations' "
          "(cloud.google.com/compute/docs/gpus/gpu-regions-zones) and accelerator types per zone")
RECORDED = "2026-12-03"

# region -> EC2 GPU instance families offered there (space separated)
AWS_REGIONS = {
    "us-east-1": "g4dn g5 g6 g6e p3 p3dn p4d p4de p5 p5e p5en p6-b200",
    "us-east-2": "g4dn g5 g6 g6e p3 p4d p5 p5en",
    "us-west-1": "g4dn g5",
    "us-west-2": "g4dn g5 g6 g6e p3 p3dn p4d p4de p5 p5e p5en p6-b200",
    "ca-central-1": "g4dn g5 g6 p3",
    "sa-east-1": "g4dn g5",
    "eu-west-1": "g4dn g5 g6 p3 p4d",
    "eu-west-2": "g4dn g5 g6 p3 p5",
    "eu-west-3": "g4dn g5",
    "eu-central-1": "g4dn g5 g6 g6e p3 p4d p5",
    "eu-north-1": "g4dn g5 g6 g6e p5",
    "ap-northeast-1": "g4dn g5 g6 g6e p3 p4d p5 p5en",
    "ap-northeast-2": "g4dn g5 g6 p3 p4d p5",
    "ap-southeast-1": "g4dn g5 g6 p4d p5",
    "ap-southeast-2": "g4dn g5 g6 p4d p5",
    "ap-south-1": "g4dn g5 g6 p5",
}

# zone -> accelerator types offered there (space separated)
GCP_ZONES = {
    "us-central1-a": "nvidia-tesla-t4 nvidia-tesla-v100 nvidia-l4 nvidia-tesla-a100 nvidia-a100-80gb nvidia-h100-80gb",
    "us-central1-b": "nvidia-tesla-t4 nvidia-tesla-v100 nvidia-l4 nvidia-tesla-a100 nvidia-h100-80gb nvidia-h200-141gb "
                     "nvidia-b200",
    "us-central1-c": "nvidia-tesla-t4 nvidia-tesla-v100 nvidia-l4 nvidia-tesla-a100 nvidia-a100-80gb nvidia-h100-80gb",
    "us-central1-f": "nvidia-tesla-t4 nvidia-tesla-v100 nvidia-tesla-a100",
    "europe-west4-a": "nvidia-tesla-t4 nvidia-tesla-v100 nvidia-l4 nvidia-tesla-a100 nvidia-a100-80gb "
                      "nvidia-h200-141gb",
    "europe-west4-b": "nvidia-tesla-t4 nvidia-tesla-v100 nvidia-l4 nvidia-tesla-a100 nvidia-h100-80gb",
    "europe-west4-c": "nvidia-tesla-t4 nvidia-tesla-v100 nvidia-l4 nvidia-h100-80gb",
    "asia-southeast1-a": "nvidia-l4",
    "asia-southeast1-b": "nvidia-tesla-t4 nvidia-l4 nvidia-tesla-a100 nvidia-h100-80gb",
    "asia-southeast1-c": "nvidia-tesla-t4 nvidia-l4 nvidia-tesla-a100 nvidia-a100-80gb nvidia-h100-80gb",
}
