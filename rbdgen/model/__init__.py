"""The robot model: URDF loading, the Python builder and the joint models."""

from .joints import (EulerXYZ, EulerZYX, FreeFlyer, Helical, JointModel, Planar, Prismatic,
                     Revolute, Spherical, TranslationXYZ)
from .model import Frame, Joint, Model, ModelBuilder
from .urdf import load_urdf, model_from_urdf_string

__all__ = ["EulerXYZ", "EulerZYX", "FreeFlyer", "Helical", "JointModel", "Planar", "Prismatic",
           "Revolute", "Spherical", "TranslationXYZ", "Frame", "Joint", "Model", "ModelBuilder",
           "load_urdf", "model_from_urdf_string"]
